import type { Logger } from './logger.js';

/**
 * The phases of a stop, in the order they run: written once, here. Each part says which phase its
 * closer belongs to when it registers it; within a phase the newest closer runs first.
 *
 * - `intake`: whatever lets new work in or starts it — schedules (retention, audit reads), the
 *   listeners (kiosk, sandbox pay page, webhooks), the broker's webhooks, the poller, the inputs.
 * - `drain`: the work in flight finishes and is recorded (the vend in progress, the refund and the
 *   register call in flight).
 * - `outputs`: the hardware to its safe state.
 * - `telemetry`: what tells the operator (MQTT's last will / offline, the storage alarms).
 * - `store`: the files (sandbox databases, the checkpointer and lineage mark, the database, the lock).
 */
export const STOP_PHASES = ['intake', 'drain', 'outputs', 'telemetry', 'store'] as const;
export type StopPhase = (typeof STOP_PHASES)[number];

export interface Closer {
  phase: StopPhase;
  /** What it closes, for the log when it fails. */
  name: string;
  close(): void | Promise<void>;
}

/** Where a part registers its closer the moment it holds something (a file, a socket, a timer). */
export interface Owner {
  own(phase: StopPhase, name: string, close: () => void | Promise<void>): void;
}

export interface Lifecycle extends Owner {
  /**
   * One named step of the start. `faultAt` (tests) is told its name first and may throw there; a
   * stop asked for meanwhile ends the start here.
   */
  step<T>(name: string, build: () => T | Promise<T>): Promise<T>;
  /** Asks the start to end at its next step (a stop while starting). */
  abort(): void;
  /**
   * Closes everything registered, phase by phase, newest first within a phase. One closer that throws
   * does not keep the others open: it is logged, the rest run, and the first error is thrown at the
   * end. Safe to call twice (the second call waits for the first).
   */
  close(): Promise<void>;
  /** The registered closers, in the order they would run. */
  order(): readonly Closer[];
}

export class StartAbortedError extends Error {
  constructor(step: string) {
    super(`stopped while starting, before ${step}`);
    this.name = 'StartAbortedError';
  }
}

export function createLifecycle(log: Logger, faultAt?: (step: string) => void): Lifecycle {
  const closers: Closer[] = [];
  let aborted = false;
  let closing: Promise<void> | null = null;

  function order(): Closer[] {
    const newestFirst = [...closers].reverse();
    return STOP_PHASES.flatMap((phase) => newestFirst.filter((closer) => closer.phase === phase));
  }

  return {
    own(phase, name, close) {
      if (closing) throw new Error(`${name} registered after the stop began`);
      closers.push({ phase, name, close });
    },
    async step(name, build) {
      if (aborted) throw new StartAbortedError(name);
      faultAt?.(name);
      return build();
    },
    abort() {
      aborted = true;
    },
    order,
    close() {
      aborted = true;
      closing ??= (async () => {
        const failures: unknown[] = [];
        for (const closer of order()) {
          try {
            await closer.close();
          } catch (err) {
            log.error({ err, part: closer.name, phase: closer.phase }, 'could not close a part while stopping');
            failures.push(err);
          }
        }
        const [first] = failures;
        if (failures.length > 0) throw first instanceof Error ? first : new Error(String(first));
      })();
      return closing;
    },
  };
}
