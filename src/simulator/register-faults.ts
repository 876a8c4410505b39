import type { Random } from './random.js';

/**
 * Faults of a simulated fiscal register, apart from the payment provider's (turning on a provider
 * fault never touches receipts). Probabilities are 0..1, drawn from the seeded fault stream.
 */
export interface RegisterFaults {
  /** The register is down: every API call is answered 503 before any work. */
  outage: boolean;
  /** Take the request, commit nothing and never answer (the socket is held until the client gives up). */
  timeoutBeforeCommit: number;
  /** Commit the request (a receipt is issued or returned), then drop the connection without an answer. */
  lostAfterCommit: number;
  /** Commit the request, then never answer (the socket is held until the client gives up). */
  timeoutAfterCommit: number;
  /** Answer 500 without doing the work (the client cannot tell whether it was done). */
  serverError: number;
  /** Wait this long before handling each call (0..60000 ms): a slow register, and the window in which a cashbox is busy. */
  latencyMs: number;
}

export const NO_REGISTER_FAULTS: Readonly<RegisterFaults> = Object.freeze({
  outage: false,
  timeoutBeforeCommit: 0,
  lostAfterCommit: 0,
  timeoutAfterCommit: 0,
  serverError: 0,
  latencyMs: 0,
});

const NAMES = Object.keys(NO_REGISTER_FAULTS) as Array<keyof RegisterFaults>;

/** Every problem with a partial register fault config, as `key: message`; empty when valid. */
export function registerFaultProblems(input: unknown): string[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return ['faults must be a JSON object'];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (!NAMES.includes(key as keyof RegisterFaults)) problems.push(`${key}: unknown register fault; known: ${NAMES.join(', ')}`);
    else if (key === 'outage') {
      if (typeof value !== 'boolean') problems.push(`${key}: must be true or false`);
    } else if (key === 'latencyMs') {
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 60_000)
        problems.push(`${key}: must be an integer 0..60000`);
    } else if (typeof value !== 'number' || !(value >= 0 && value <= 1)) problems.push(`${key}: must be a probability 0..1`);
  }
  return problems;
}

/** A holder of one register's faults: get, merge (throws on a bad value, changing nothing). */
export function createRegisterFaults(initial?: Partial<RegisterFaults>) {
  let faults: RegisterFaults = { ...NO_REGISTER_FAULTS };
  const set = (partial: Partial<RegisterFaults>) => {
    const problems = registerFaultProblems(partial);
    if (problems.length > 0) throw new Error(`invalid register faults: ${problems.join('; ')}`);
    faults = { ...faults, ...partial };
  };
  if (initial) set(initial);
  return { get: (): RegisterFaults => ({ ...faults }), set };
}

export type DrawnRegisterFault = 'outage' | 'timeoutBeforeCommit' | 'serverError' | 'lostAfterCommit' | 'timeoutAfterCommit' | null;

/** Drawn in a fixed order; an outage draws nothing. */
export function drawRegisterFault(faults: RegisterFaults, random: Random): DrawnRegisterFault {
  if (faults.outage) return 'outage';
  const timeout = random.chance(faults.timeoutBeforeCommit);
  const serverError = random.chance(faults.serverError);
  const lost = random.chance(faults.lostAfterCommit);
  const silentAfter = random.chance(faults.timeoutAfterCommit);
  if (timeout) return 'timeoutBeforeCommit';
  if (serverError) return 'serverError';
  if (lost) return 'lostAfterCommit';
  if (silentAfter) return 'timeoutAfterCommit';
  return null;
}
