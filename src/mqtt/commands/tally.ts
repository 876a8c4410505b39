/**
 * Messages on `cmd/…` that nobody's key vouches for (unsigned, unreadable, refused envelopes, unknown
 * commands), counted in memory. Anyone who may publish there can send thousands a second: one
 * durable record each would wear out the device's SD card and slow its API, so they are counted here
 * and written as one summary at most per interval (the caller's timer), which the outbox publishes
 * as an event. Verified commands keep their own audit record each.
 */
export interface UnverifiedSummary {
  /** ISO times of the first and the last message counted. */
  since: string;
  until: string;
  total: number;
  /** Per command (known names; every other topic is `(unknown)`), per outcome code (`ok` when it ran). */
  byCommand: Record<string, Record<string, number>>;
}

export interface CommandTally {
  add(command: string, code: string | null, now: number): void;
  /** The counts since the last take, or null when there were none; starts counting afresh. */
  take(): UnverifiedSummary | null;
  /** Counted since the last take (tests, logs). */
  pending(): number;
}

/** Distinct outcome codes kept per command: codes are ours, but a bound keeps the summary small whatever happens. */
const MAX_CODES = 32;

export function createCommandTally(knownCommands: readonly string[]): CommandTally {
  const known = new Set(knownCommands);
  let counts = new Map<string, Map<string, number>>();
  let total = 0;
  let first = 0;
  let last = 0;
  return {
    add(command, code, now) {
      const name = known.has(command) ? command : '(unknown)';
      const outcome = code ?? 'ok';
      let byCode = counts.get(name);
      if (!byCode) counts.set(name, (byCode = new Map()));
      const key = byCode.has(outcome) || byCode.size < MAX_CODES ? outcome : '(other)';
      byCode.set(key, (byCode.get(key) ?? 0) + 1);
      if (total === 0) first = now;
      last = now;
      total += 1;
    },
    take() {
      if (total === 0) return null;
      const byCommand: UnverifiedSummary['byCommand'] = {};
      for (const [name, byCode] of counts) byCommand[name] = Object.fromEntries(byCode);
      const summary = { since: new Date(first).toISOString(), until: new Date(last).toISOString(), total, byCommand };
      counts = new Map();
      total = 0;
      return summary;
    },
    pending: () => total,
  };
}
