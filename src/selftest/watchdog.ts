import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadSettings } from '../settings/index.js';
import { openDatabase, type Db } from '../store/index.js';

/**
 * The systemd watchdog (WatchdogSec=): ping WATCHDOG=1 only while the process is healthy. A ping
 * from a timer alone would keep a process alive whose database is gone; so each tick first runs a
 * real read on the database file, and a tick that cannot run (blocked event loop) pings nothing.
 */
export interface Watchdog {
  stop(): void;
}

/** Ping interval from systemd's WATCHDOG_USEC: a third of it, so one late tick is not fatal. Null when not asked. */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv, pid: number): number | null {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isFinite(usec) || usec <= 0) return null;
  // WATCHDOG_PID names the process systemd watches; a child that inherited the variable must not ping.
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return null;
  return Math.max(100, Math.floor(usec / 1000 / 3));
}

export function startWatchdog(options: {
  intervalMs: number;
  probe: () => void;
  notify: (state: string) => void;
  onUnhealthy?: (err: unknown) => void;
}): Watchdog {
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    try {
      options.probe();
    } catch (err) {
      options.onUnhealthy?.(err);
      return;
    }
    options.notify('WATCHDOG=1');
  };
  // The first ping comes one interval after READY=1, well inside WatchdogSec.
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/**
 * A second, read-only connection that reads a real page of the service's database. It also notices
 * the file being removed or replaced under the service (an open connection would go on reading the
 * deleted inode). Reopened after an error, so a transient problem does not stop the pings for good.
 */
export function databaseProbe(path: string): { probe(): void; close(): void } {
  let db: Db | null = null;
  let inode = 0;
  return {
    probe() {
      try {
        if (!db) {
          db = openDatabase(path, { readonly: true });
          inode = statSync(path).ino;
        }
        db.prepare('SELECT count(*) AS n FROM meta').get();
        if (statSync(path).ino !== inode) throw new Error(`${path} was replaced while the service had it open`);
      } catch (err) {
        try {
          db?.close();
        } catch {
          /* already broken */
        }
        db = null;
        throw err;
      }
    },
    close() {
      db?.close();
      db = null;
    },
  };
}

/** The database of `vendgate start [--config FILE]`, resolved the way the start command resolves it. */
export function watchdogDatabasePath(argv: string[], env: NodeJS.ProcessEnv): string | null {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { config: { type: 'string', short: 'c' } },
      allowPositionals: true,
      strict: false,
    });
    if (positionals[0] !== 'start') return null;
    return loadSettings({ path: typeof values.config === 'string' ? values.config : undefined, env }).settings.storage.path;
  } catch {
    // Bad settings: start exits 78 by itself; there is nothing to watch.
    return null;
  }
}
