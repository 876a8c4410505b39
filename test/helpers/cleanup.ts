import { afterEach } from 'vitest';
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

/** Closes a watcher after emptying the retained topics it saw, so a shared broker keeps nothing of the test. */
export async function closeWatcher(watcher: Watcher): Promise<void> {
  await watcher.clearRetained();
  await watcher.close();
}

/** Stops a service (a process or an in-process stack). */
export const stop = (running: { stop(): Promise<unknown> }): Promise<unknown> => running.stop();
