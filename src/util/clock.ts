/** Time source. Everything that reads the time takes a Clock so tests can move it. */
export interface Clock {
  /** Milliseconds since the Unix epoch: for records and for comparing with the provider's times. */
  now(): number;
  /**
   * Milliseconds on a clock that only goes forward at the pace of real time (not the wall clock: a Pi
   * has no RTC and NTP moves it by hours or months). For schedules: when to poll, back off, expire.
   * Absent (a hand-made test clock): now() is used.
   */
  monotonic?(): number;
}

export const systemClock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };

/** The schedule clock of `clock` (its monotonic one, else its wall clock). */
export function scheduleClock(clock: Clock): () => number {
  const { monotonic } = clock;
  return monotonic ? () => monotonic.call(clock) : () => clock.now();
}

/** A clock tests can set and advance by hand. */
export function createManualClock(startMs = Date.UTC(2026, 10, 29, 12, 0, 0)): Clock & {
  set(ms: number): void;
  advance(ms: number): void;
} {
  let current = startMs;
  return {
    now: () => current,
    set: (ms) => {
      current = ms;
    },
    advance: (ms) => {
      current += ms;
    },
  };
}

export function toIso(ms: number | null | undefined): string | null {
  return ms == null ? null : new Date(ms).toISOString();
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
