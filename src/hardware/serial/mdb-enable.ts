import type { Logger } from '../../util/logger.js';
import { errorMessage } from '../../util/errors.js';

/** A board that has not reported ENABLED this long after C,1 (a VMC stuck in setup) is enabled again. */
export const BOOT_STALL_MS = 30_000;

export interface ReaderEnable {
  /** C,0, the volatile settings, C,1: after every open of the port and every real reset. */
  enable(reason: string): Promise<void>;
  /** C,1 sent, ENABLED not yet seen: INACTIVE and DISABLED are the board bringing the reader up, not a reset. */
  readonly booting: boolean;
  /** The board reported ENABLED. */
  enabledSeen(): void;
  /** Resolves at the next ENABLED (true) or after `ms` (false). */
  nextEnabled(ms: number): Promise<boolean>;
  stop(): void;
}

export function createReaderEnable(deps: {
  logger: Logger;
  send(command: string): Promise<void>;
  setconf: readonly string[];
  /** False while nothing may be sent (stopped, the machine's setup refused). */
  allowed(): boolean;
}): ReaderEnable {
  const log = deps.logger;
  let booting = false;
  let stallTimer: ReturnType<typeof setTimeout> | null = null;
  const waiters = new Set<(value: boolean) => void>();
  const clearStall = () => {
    if (stallTimer) clearTimeout(stallTimer);
    stallTimer = null;
  };
  const self: ReaderEnable = {
    get booting() {
      return booting;
    },
    async enable(reason) {
      if (!deps.allowed()) return;
      booting = true;
      clearStall();
      stallTimer = setTimeout(() => {
        stallTimer = null;
        if (!booting || !deps.allowed()) return;
        log.warn({ waitedMs: BOOT_STALL_MS }, 'the machine has not enabled the reader since C,1: enabling again');
        void self.enable('no ENABLED after C,1');
      }, BOOT_STALL_MS);
      try {
        if (deps.setconf.length > 0) {
          await deps.send('C,0');
          for (const line of deps.setconf) await deps.send(line);
        }
        await deps.send('C,1');
        log.info({ reason, settings: deps.setconf.length }, 'mdb reader enable sent');
      } catch (err) {
        log.warn({ err: errorMessage(err), reason }, 'mdb enable could not be sent');
      }
    },
    enabledSeen() {
      booting = false;
      clearStall();
      for (const wake of [...waiters]) wake(true);
    },
    nextEnabled(ms) {
      return new Promise((resolve) => {
        const done = (value: boolean) => {
          clearTimeout(timer);
          waiters.delete(done);
          resolve(value);
        };
        const timer = setTimeout(() => done(false), ms);
        waiters.add(done);
      });
    },
    stop() {
      clearStall();
      for (const wake of [...waiters]) wake(false);
    },
  };
  return self;
}
