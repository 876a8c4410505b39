import { afterEach, onTestFinished } from 'vitest';
import type { Watcher } from '../mqtt/watch.js';

/** Registers a closer for what a test opened and returns what it was given. */
export type Defer = <T>(value: T, close: (value: T) => unknown) => T;

/**
 * A test's closers, registered as each part is opened (`svc = defer(await startService(…), stopService)`),
 * run after each test of the calling scope, newest first. Every closer runs even when an earlier one
 * failed; the first failure is thrown after all of them ran.
 */
export function cleanup(): Defer {
  let closers: Array<() => unknown> = [];
  afterEach(async () => {
    const due = closers.reverse();
    closers = [];
    const failures: unknown[] = [];
    for (const close of due) {
      try {
        await close();
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length > 0) throw failures[0];
  });
  return (value, close) => {
    closers.push(() => close(value));
    return value;
  };
}

/**
 * A harness module's "undo this after the test" (servers, simulators, brokers, temp dirs): each
 * closer runs when the current test finishes, newest first, all of them even when one fails.
 *
 * Registered through the running test (`onTestFinished`), never with an `afterEach` at the top of
 * the harness module: test files share each worker's modules (`isolate: false`, vitest.config.ts),
 * so a helper module's top-level hook is registered once, in the first file that imports it, and
 * the cleanups of every later file never ran. Seen: the six services of
 * test/selftest/tunnel.test.ts still running, orphaned, after the whole suite had ended. (`cleanup()`
 * above is called by each test file itself, so each file gets its own hook.) Call it inside a test.
 */
export function cleanupList(): (close: () => unknown) => void {
  const pending: Array<() => unknown> = [];
  return (close) => {
    if (pending.length === 0) {
      onTestFinished(async () => {
        const failures: unknown[] = [];
        while (pending.length > 0) {
          try {
            await pending.pop()!();
          } catch (err) {
            failures.push(err);
          }
        }
        if (failures.length > 0) throw failures[0];
      });
    }
    pending.push(close);
  };
}

/** Closes a watcher after emptying the retained topics it saw, so a shared broker keeps nothing of the test. */
export async function closeWatcher(watcher: Watcher): Promise<void> {
  await watcher.clearRetained();
  await watcher.close();
}

/** Stops a service (a process or an in-process stack). */
export const stop = (running: { stop(): Promise<unknown> }): Promise<unknown> => running.stop();
