import { inspect } from 'node:util';

/** What `waitFor` is told: how long, how often, and what it waits for (named in the failure). */
export interface WaitOptions {
  /** Fail after this long (default 30 s: a loaded machine is slow, a passing test does not wait it out). */
  timeoutMs?: number;
  /** How often the predicate is asked (default 5 ms). */
  intervalMs?: number;
  /** Named in the failure: "timed out after 5000 ms waiting for <what>". A function is asked only then. */
  what?: string | (() => string);
}

type Truthy<T> = Exclude<Awaited<T>, false | null | undefined | 0 | ''>;

/**
 * The one wait of the test suite: asks `predicate` until it returns a truthy value and returns that
 * value. Tests wait on conditions, never on sleeps. A predicate that throws counts as not yet; on
 * timeout the error names `what` and the last value or error the predicate gave, so a failure reads
 * without a rerun.
 */
export async function waitFor<T>(predicate: () => T, options: WaitOptions = {}): Promise<Truthy<T>> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = performance.now() + timeoutMs;
  let last: { value: unknown } | { error: unknown } | undefined;
  for (;;) {
    try {
      const value = await predicate();
      if (value) return value as Truthy<T>;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (performance.now() > deadline) {
      const what = typeof options.what === 'function' ? options.what() : (options.what ?? 'a condition');
      const seen =
        last === undefined
          ? ''
          : 'error' in last
            ? `; last error: ${String(last.error)}`
            : `; last value: ${inspect(last.value, { depth: 4 })}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${seen}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 5));
  }
}
