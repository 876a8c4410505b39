/**
 * Node.js release lines vendgate supports and when each one stops getting security fixes
 * (https://github.com/nodejs/release#release-schedule). A line past its date still runs; the
 * service warns at start so an operator plans the upgrade.
 */
export const NODE_END_OF_LIFE: Readonly<Record<number, string>> = { 20: '2026-04-30', 22: '2027-04-30', 24: '2028-04-30' };

export interface NodeSupport {
  major: number;
  /** The line's end-of-life date (YYYY-MM-DD), or null for a line this release does not know. */
  endOfLife: string | null;
  /** `end_of_life`: past its date; `unknown`: a line vendgate was not tested on. */
  status: 'supported' | 'end_of_life' | 'unknown';
}

export function nodeSupport(version: string, now: number): NodeSupport {
  const major = Number.parseInt(version.replace(/^v/, ''), 10);
  const endOfLife = NODE_END_OF_LIFE[major] ?? null;
  if (endOfLife === null) return { major, endOfLife, status: 'unknown' };
  return { major, endOfLife, status: now >= Date.parse(`${endOfLife}T00:00:00Z`) ? 'end_of_life' : 'supported' };
}

/** The supported lines that are still maintained at `now`, newest last ("22 or 24"). */
export function maintainedNodeLines(now: number): number[] {
  return Object.keys(NODE_END_OF_LIFE)
    .map(Number)
    .filter((major) => nodeSupport(String(major), now).status === 'supported');
}
