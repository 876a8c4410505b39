/** Why the device may take no orders: one key per source, so each source clears only its own. */
export type OutOfServiceReason = 'operator' | 'inhibit' | 'fire_alarm' | 'serial_line' | 'storage' | 'fiscal';

/** What the screen, /healthz and MQTT say for a reason set without a detail. */
const DEFAULT_TEXT: Record<OutOfServiceReason, string> = {
  operator: 'operator: out of service',
  inhibit: 'the machine inhibits sales',
  fire_alarm: 'fire alarm: gate held open',
  serial_line: 'no connection to the vending machine',
  storage: 'the card holding the database refuses writes',
  fiscal: 'fiscal receipts cannot be issued',
};

/** The prefix of a reason set with a detail ("operator: cleaning"). */
const LABEL: Record<OutOfServiceReason, string> = {
  operator: 'operator',
  inhibit: 'inhibit',
  fire_alarm: 'fire alarm',
  serial_line: 'serial line',
  storage: 'storage',
  fiscal: 'fiscal register',
};

/**
 * Whether the device takes orders, and why not. The order service refuses new orders while a
 * reason is set; the screen, /healthz and MQTT state show the joined reasons.
 */
export interface Availability {
  /** This source stops sales. Setting it again replaces its detail and keeps its place in reason(). */
  set(reason: OutOfServiceReason, detail?: string): void;
  /** This source no longer stops sales (the others still may). No-op when it was not set. */
  clear(reason: OutOfServiceReason): void;
  /** Every active reason, in the order they were first set, joined with "; "; null when available. */
  reason(): string | null;
  isAvailable(): boolean;
  /** Called with the new reason() each time it changes (not on a set or clear that changes nothing). */
  subscribe(listener: (reason: string | null) => void): () => void;
}

export function createAvailability(): Availability {
  const reasons = new Map<OutOfServiceReason, string>();
  const listeners = new Set<(reason: string | null) => void>();
  const joined = (): string | null => (reasons.size ? [...reasons.values()].join('; ') : null);

  function changed(before: string | null): void {
    const now = joined();
    if (now === before) return;
    for (const listener of [...listeners]) listener(now);
  }

  return {
    set(reason, detail) {
      const before = joined();
      reasons.set(reason, detail ? `${LABEL[reason]}: ${detail}` : DEFAULT_TEXT[reason]);
      changed(before);
    },
    clear(reason) {
      const before = joined();
      reasons.delete(reason);
      changed(before);
    },
    reason: joined,
    isAvailable: () => reasons.size === 0,
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}
