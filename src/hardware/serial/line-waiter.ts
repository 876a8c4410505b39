import type { SerialConnection } from './connection.js';

export type WaitResult<T> = { kind: 'match'; value: T; line: string } | { kind: 'timeout' } | { kind: 'down' };

export interface LineWaiter<T> {
  /** Starts the clock (after the command is written) and resolves with the first match. */
  arm(ms: number): Promise<WaitResult<T>>;
  cancel(): void;
}

/**
 * Listens from creation, so an answer that arrives before arm() (a fast machine) is not missed.
 * Lines `classify` returns null for go to `onUnmatched`. The line going down ends the wait.
 */
export function waitForLine<T>(
  connection: SerialConnection,
  classify: (line: string) => T | null,
  onUnmatched: (line: string) => void,
): LineWaiter<T> {
  let resolve: (result: WaitResult<T>) => void = () => {};
  const promise = new Promise<WaitResult<T>>((r) => {
    resolve = r;
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let done = false;
  const offLine = connection.onLine((line) => {
    const value = classify(line);
    if (value === null) onUnmatched(line);
    else finish({ kind: 'match', value, line });
  });
  const offState = connection.onState((up) => {
    if (!up) finish({ kind: 'down' });
  });
  function finish(result: WaitResult<T>): void {
    if (done) return;
    done = true;
    clearTimeout(timer);
    offLine();
    offState();
    resolve(result);
  }
  return {
    arm(ms) {
      if (!done) timer = setTimeout(() => finish({ kind: 'timeout' }), ms);
      return promise;
    },
    cancel() {
      finish({ kind: 'timeout' });
    },
  };
}
