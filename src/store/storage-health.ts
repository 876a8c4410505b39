import { closeSync, fsyncSync, openSync, rmSync, statSync, statfsSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Db } from './open.js';

/**
 * The card beneath the database, as a state rather than a crash. A write that fails with ENOSPC,
 * EROFS or EIO (SQLite: SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR) is reported here: the money path
 * keeps what it knows in memory and retries, new orders are refused with VG_ERR_STORAGE, /healthz
 * names the disk, and the operator hears of it over MQTT without a row in the database.
 *
 * The ballast: a file of zeros beside the database (`<database>.ballast`, storage.ballastMb), laid
 * while there is room. On a full disk it is deleted at once, so the write that settles a vend that
 * already fired finds room; it is laid again when the disk has room for it and one more.
 */
export type StorageFaultKind = 'full' | 'readonly' | 'io_error';

export interface StorageFault {
  kind: StorageFaultKind;
  /** The database file. */
  path: string;
  /** Free bytes on its file system when last looked at (null: not readable). */
  freeBytes: number | null;
  /** The error code that said so (SQLITE_FULL, ENOSPC, EROFS, SQLITE_IOERR_WRITE, …). */
  code: string;
  /** Wall-clock ms of the first failure of this fault. */
  since: number;
}

/** The alarm each fault raises (MQTT `alarms/<name>`, retained). */
export const STORAGE_ALARMS: Readonly<Record<StorageFaultKind, string>> = {
  full: 'storage_full',
  readonly: 'storage_readonly',
  io_error: 'storage_io_error',
};

const FULL_CODES = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);
const READONLY_CODES = new Set(['EROFS', 'SQLITE_READONLY', 'SQLITE_READONLY_DBMOVED', 'SQLITE_READONLY_DIRECTORY']);

function codeOf(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
}

/** True for an error that comes from the storage beneath the database, not from the program. */
export function isStorageError(err: unknown): boolean {
  const code = codeOf(err);
  if (code === null) return false;
  return FULL_CODES.has(code) || READONLY_CODES.has(code) || code === 'EIO' || code.startsWith('SQLITE_IOERR');
}

/** Free bytes an unprivileged process may still write under `dir` (bavail), or null. */
export function freeBytesAt(dir: string): number | null {
  try {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  } catch {
    return null;
  }
}

/**
 * Writes, syncs and removes a small file in `dir`: the kernel's own answer to "can this card take a
 * write now" (an ext4 turned read-only by its error path still says `rw` in the mount table).
 * Returns null when it could, else the error code.
 */
export function probeWrite(dir: string): string | null {
  const path = join(dir, `.vendgate-write-probe-${process.pid}`);
  let fd: number | null = null;
  try {
    fd = openSync(path, 'w');
    writeSync(fd, 'probe\n');
    fsyncSync(fd);
    return null;
  } catch (err) {
    return codeOf(err) ?? 'EIO';
  } finally {
    if (fd !== null) closeSync(fd);
    rmSync(path, { force: true });
  }
}

/** What a storage error means for this file system: a write probe tells read-only from a plain I/O error. */
export function classifyStorageError(err: unknown, dir: string): { kind: StorageFaultKind; code: string } | null {
  const code = codeOf(err);
  if (code === null || !isStorageError(err)) return null;
  if (FULL_CODES.has(code)) return { kind: 'full', code };
  if (READONLY_CODES.has(code)) return { kind: 'readonly', code };
  // SQLite says SQLITE_IOERR_WRITE for EROFS and ENOSPC alike on an open file: ask the kernel.
  const probe = probeWrite(dir);
  if (probe === 'EROFS') return { kind: 'readonly', code: `${code} (EROFS)` };
  if (probe === 'ENOSPC' || probe === 'EDQUOT') return { kind: 'full', code: `${code} (${probe})` };
  return { kind: 'io_error', code };
}

export interface StorageHealth {
  /** The database file this watches. */
  readonly path: string;
  /** The fault in force, or null when the card takes writes. */
  fault(): StorageFault | null;
  /**
   * A write failed: when `err` is a storage error, it becomes (or stays) the fault, the ballast is
   * given back on a full disk, and listeners hear of a new fault. Returns the fault, or null when
   * `err` is not a storage error (a bug: the caller handles it as before).
   */
  report(err: unknown): StorageFault | null;
  /**
   * Looks whether the fault has gone: room for the ballast and one more, a write probe, and the
   * caller's database write (`probeDatabase`). Lays the ballast again and clears the fault. True
   * when it cleared.
   */
  recheck(): boolean;
  /** Lays the ballast when it is missing and there is room for it twice over. */
  reserve(): void;
  /** Called with the new fault (or null when it cleared). */
  onChange(listener: (fault: StorageFault | null, previous: StorageFault | null) => void): void;
  /** One line for /healthz, the selftest and logs. */
  describe(): string;
  /** Rechecks on a timer while a fault is in force. */
  start(): void;
  stop(): void;
}

export interface StorageHealthDeps {
  now: () => number;
  /** A tiny write into the database (a meta row): the fault has gone only when SQLite can write again. */
  probeDatabase?: () => void;
  onLog?: (level: 'warn' | 'error' | 'info', fields: Record<string, unknown>, message: string) => void;
}

/** The database write recheck() asks for: one meta row, in its own transaction. */
export function touchDatabase(db: Db, now: number): void {
  db.transaction(() =>
    db
      .prepare("INSERT INTO meta (key, value) VALUES ('storage_checked_at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
      .run(new Date(now).toISOString()),
  ).immediate();
}

export const ballastPathFor = (databasePath: string) => `${databasePath}.ballast`;

const CHUNK = Buffer.alloc(64 * 1024);

/** Writes `bytes` of zeros (not a sparse file: the blocks must really be taken) and syncs them. */
function layBallast(path: string, bytes: number): void {
  const fd = openSync(path, 'w');
  try {
    for (let written = 0; written < bytes;) {
      written += writeSync(fd, CHUNK, 0, Math.min(CHUNK.length, bytes - written));
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function sizeOf(path: string): number | null {
  try {
    return statSync(path).size;
  } catch {
    return null;
  }
}

export function createStorageHealth(
  deps: StorageHealthDeps,
  settings: { path: string; ballastBytes: number; recheckMs?: number },
): StorageHealth {
  const path = resolve(settings.path);
  const dir = dirname(path);
  const ballast = ballastPathFor(path);
  const listeners: ((fault: StorageFault | null, previous: StorageFault | null) => void)[] = [];
  let current: StorageFault | null = null;
  let timer: NodeJS.Timeout | null = null;
  let running = false;
  const log = deps.onLog ?? (() => {});

  function set(next: StorageFault | null): void {
    const previous = current;
    current = next;
    if (previous?.kind === next?.kind && (previous === null) === (next === null)) return;
    for (const listener of listeners) {
      try {
        listener(next, previous);
      } catch (err) {
        log('warn', { err }, 'a storage listener failed');
      }
    }
    schedule();
  }

  function schedule(): void {
    if (!running || timer || !current) return;
    timer = setTimeout(() => {
      timer = null;
      health.recheck();
      schedule();
    }, settings.recheckMs ?? 2_000);
    timer.unref();
  }

  function giveBackBallast(): boolean {
    if (sizeOf(ballast) === null) return false;
    rmSync(ballast, { force: true });
    log('warn', { ballast, freeBytes: freeBytesAt(dir) }, 'disk full: the ballast file was given back so the money path can write');
    return true;
  }

  const health: StorageHealth = {
    path,
    fault: () => current,

    report(err) {
      const classified = classifyStorageError(err, dir);
      if (!classified) return null;
      if (classified.kind === 'full') giveBackBallast();
      const fault: StorageFault = {
        kind: classified.kind,
        path,
        freeBytes: freeBytesAt(dir),
        code: classified.code,
        since: current?.kind === classified.kind ? current.since : deps.now(),
      };
      if (!current || current.kind !== fault.kind)
        log('error', { path, kind: fault.kind, code: fault.code, freeBytes: fault.freeBytes }, 'storage fault: new orders are refused');
      set(fault);
      return fault;
    },

    recheck() {
      if (!current) return false;
      const free = freeBytesAt(dir);
      current = { ...current, freeBytes: free };
      if (current.kind === 'full' && (free === null || free < 2 * settings.ballastBytes + 64 * 1024)) return false;
      if (probeWrite(dir) !== null) return false;
      try {
        deps.probeDatabase?.();
      } catch (err) {
        const again = classifyStorageError(err, dir);
        if (again) current = { ...current, code: again.code };
        return false;
      }
      health.reserve();
      log('info', { path, kind: current.kind, freeBytes: free }, 'storage writable again: taking orders');
      set(null);
      return true;
    },

    reserve() {
      if (settings.ballastBytes <= 0) return;
      if (sizeOf(ballast) === settings.ballastBytes) return;
      const free = freeBytesAt(dir);
      if (free === null || free < 2 * settings.ballastBytes) {
        log('warn', { ballast, freeBytes: free, ballastBytes: settings.ballastBytes }, 'no room for the ballast file');
        return;
      }
      try {
        layBallast(ballast, settings.ballastBytes);
      } catch (err) {
        rmSync(ballast, { force: true });
        log('warn', { err, ballast }, 'could not lay the ballast file');
      }
    },

    onChange(listener) {
      listeners.push(listener);
    },

    describe() {
      return describeStorage(current, path);
    },

    start() {
      running = true;
      schedule();
    },

    stop() {
      running = false;
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
  return health;
}

/** The sentence for a fault (or for a healthy card), naming the file and the free bytes. */
export function describeStorage(fault: StorageFault | null, path: string): string {
  if (!fault) return `${path}: writable`;
  const free = fault.freeBytes === null ? 'free space unknown' : `${fault.freeBytes} bytes free`;
  switch (fault.kind) {
    case 'full':
      return `the disk holding ${path} is full (${free}, ${fault.code}): free space on it (old logs: journalctl --vacuum-size=50M)`;
    case 'readonly':
      return `the card holding ${path} has turned read-only (${fault.code}, ${free}): it is failing; replace the SD card and restore the database`;
    case 'io_error':
      return `the card holding ${path} reports I/O errors (${fault.code}, ${free}): run vendgate doctor and replace the SD card`;
  }
}
