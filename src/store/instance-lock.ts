import Database from 'better-sqlite3';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ErrorCodes, VendgateError } from '../util/errors.js';

/**
 * One service per database. Two services on one file each run start-up recovery over the other's
 * running vend (→ vend_uncertain, a refund for goods handed out), so the second must not start.
 *
 * The lock is SQLite's own: a dedicated file `<database>.lock` held in `BEGIN EXCLUSIVE` with
 * `locking_mode=EXCLUSIVE` for the life of the process. SQLite takes it with fcntl() byte-range
 * locks, which the kernel drops when the process dies — SIGKILL and power cuts included — so
 * there is never a stale lock to clean up. Why not a package: Node has no flock(); `fs-ext` is
 * native code to build on every Pi for the one call better-sqlite3 (already built there) makes for
 * us, and lock-file packages such as proper-lockfile guess staleness from mtimes instead of
 * asking the kernel. SQLite also counts two connections of one process as two holders, which
 * plain fcntl() does not, so two apps in one test process are refused the same way.
 *
 * The lock is a separate file, not the database itself: `orders`, `export` and the selftest open
 * the database beside the running service and must keep working. The holder's pid goes to
 * `<database>.lock.pid` (a locked SQLite file cannot be read by anyone else), for the message.
 */
export interface InstanceLock {
  readonly lockPath: string;
  /** Releases the lock (the process's exit does the same). Safe to call twice. */
  release(): void;
}

export class InstanceLockedError extends VendgateError {
  readonly holderPid: number | null;
  readonly lockPath: string;

  constructor(lockPath: string, holderPid: number | null) {
    const who = holderPid === null ? 'another process (pid not known yet)' : `process ${holderPid}`;
    super(
      ErrorCodes.ALREADY_RUNNING,
      `another vendgate is already running on this database: ${who} holds ${lockPath}. ` +
        'Stop it first (sudo systemctl stop vendgate' +
        (holderPid === null ? '' : `, or kill ${holderPid}`) +
        '); nothing was changed.',
      { details: { holderPid, lockPath } },
    );
    this.name = 'InstanceLockedError';
    this.holderPid = holderPid;
    this.lockPath = lockPath;
  }
}

export const lockPathFor = (databasePath: string) => `${databasePath}.lock`;
const pidPathFor = (lockPath: string) => `${lockPath}.pid`;

function readHolderPid(lockPath: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(pidPathFor(lockPath), 'utf8').trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/**
 * Takes the lock of `databasePath` without waiting, before anything opens the database. Throws
 * InstanceLockedError (naming the holder's pid) when another process or connection holds it.
 */
export function acquireInstanceLock(databasePath: string, pid = process.pid): InstanceLock {
  if (databasePath === ':memory:') return { lockPath: ':memory:', release() {} };
  const lockPath = lockPathFor(databasePath);
  mkdirSync(dirname(lockPath), { recursive: true });
  let connection: Database.Database | null = new Database(lockPath, { timeout: 0 });
  try {
    connection.pragma('locking_mode = EXCLUSIVE');
    connection.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    connection.close();
    if (isBusy(err)) throw new InstanceLockedError(lockPath, readHolderPid(lockPath));
    throw err;
  }
  writeFileSync(pidPathFor(lockPath), `${pid}\n`);
  return {
    lockPath,
    release() {
      if (!connection) return;
      // The pid file goes first: once the lock is free, a pid here would name the wrong process.
      // On a card gone read-only it stays; the lock itself still goes with the connection.
      try {
        rmSync(pidPathFor(lockPath), { force: true });
      } catch {
        // EROFS / EIO: nothing more to do about it here
      }
      connection.close();
      connection = null;
    },
  };
}
