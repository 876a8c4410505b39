import Database from 'better-sqlite3';
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { openDatabase, type Db } from './open.js';
import { acquireInstanceLock } from './instance-lock.js';
import { inspectWal } from './wal.js';
import { lineagePath, logLineage, marksOf, readSideMark, writeMeta, META_BACKUP, META_DB_ACTION, type LineageMarks } from './lineage.js';
import type { BackupMark, DbAction } from './lineage-verdict.js';

/**
 * `vendgate db backup|restore|replace`: the database file handled as the start expects to find it.
 * A backup is a consistent copy (VACUUM INTO, the WAL's commits included), integrity-checked, with
 * a mark inside saying it is a backup and where its original stood, synced before it counts. A
 * restore or a replacement takes the instance lock (never under a running service), keeps what it
 * replaces (the database, its WAL and its side mark) in a directory beside it, writes into the
 * database it puts in place what it did, and syncs it before the rename; the next start reads that
 * record (src/store/lineage-verdict.ts) and raises database_restored or database_replaced.
 */
export class DbFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DbFileError';
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function syncDir(path: string): void {
  try {
    syncFile(path);
  } catch {
    // Some file systems refuse to sync a directory; the rename is still atomic.
  }
}

function stampOf(now: number): string {
  return new Date(now).toISOString().replace(/[:.]/g, '-');
}

function integrity(db: Db): string[] {
  return (db.prepare('PRAGMA integrity_check(20)').pluck().all() as string[]).filter((row) => row !== 'ok');
}

function hasTable(db: Db, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/** Refuses a database whose WAL SQLite would discard: copying or replacing it would lose those commits silently. */
function refuseDiscardedWal(dbPath: string, what: string): void {
  const wal = inspectWal(dbPath);
  if (wal.discarded)
    throw new DbFileError(
      `${wal.path} is unreadable (${wal.discarded}): ${what} would lose the commits in it without a trace; start the service once (it keeps a copy of the log and treats the database as restored), then try again`,
    );
}

export interface BackupOutcome {
  path: string;
  bytes: number;
  marks: LineageMarks;
  takenAt: number;
}

/** A consistent copy of the database at `target` (never over an existing file); works while the service runs. */
export function backupDatabase(dbPath: string, target: string, now: number): BackupOutcome {
  if (!existsSync(dbPath)) throw new DbFileError(`no database at ${resolve(dbPath)}`);
  if (existsSync(target)) throw new DbFileError(`${target} exists; a backup never overwrites a file (choose another name)`);
  refuseDiscardedWal(dbPath, 'a backup');
  const partial = `${target}.partial`;
  rmSync(partial, { force: true });
  const source = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    source.pragma('busy_timeout = 5000');
    source.prepare('VACUUM INTO ?').run(partial);
  } finally {
    source.close();
  }
  let marks: LineageMarks;
  const copy = new Database(partial);
  try {
    const problems = integrity(copy);
    if (problems.length > 0) throw new DbFileError(`the copy fails its integrity check: ${problems.slice(0, 3).join('; ')}`);
    copy.pragma('journal_mode = DELETE');
    marks = marksOf(copy);
    const mark: BackupMark = { ...marks, takenAt: now };
    copy.transaction(() => {
      writeMeta(copy, META_BACKUP, mark);
      if (hasTable(copy, 'lineage_log')) logLineage(copy, now, 'db:backup', { from: resolve(dbPath), marks });
    })();
  } catch (err) {
    copy.close();
    rmSync(partial, { force: true });
    throw err;
  }
  copy.close();
  syncFile(partial);
  renameSync(partial, target);
  syncDir(dirname(resolve(target)));
  return { path: target, bytes: statSync(target).size, marks, takenAt: now };
}

export interface PutInPlaceOutcome {
  /** Where the database it replaced (with its WAL and side mark) was kept, or null when there was none. */
  keptAt: string | null;
  replaced: LineageMarks | null;
  /** The database now in place. */
  marks: LineageMarks;
}

/** The marks of the database in place, as far as it can be read; else the side mark's. */
function currentMarks(dbPath: string): LineageMarks | null {
  if (existsSync(dbPath)) {
    try {
      const db = new Database(dbPath, { readonly: true, fileMustExist: true });
      try {
        return marksOf(db);
      } finally {
        db.close();
      }
    } catch {
      // damaged: the side mark says what it was
    }
  }
  return readSideMark(dbPath);
}

/** Moves the database, its WAL and shared memory into `<db>.replaced-<time>/`; copies the side mark there (it stays as evidence). */
function keepCurrent(dbPath: string, now: number): string | null {
  const files = ['', '-wal', '-shm'].map((suffix) => `${dbPath}${suffix}`).filter((path) => existsSync(path));
  if (files.length === 0) return null;
  const kept = `${dbPath}.replaced-${stampOf(now)}`;
  mkdirSync(kept, { mode: 0o750 });
  for (const file of files) renameSync(file, join(kept, basename(file)));
  if (existsSync(lineagePath(dbPath))) copyFileSync(lineagePath(dbPath), join(kept, basename(lineagePath(dbPath))));
  syncDir(kept);
  syncDir(dirname(resolve(dbPath)));
  return kept;
}

/** Writes what was done into the database about to go in place, syncs it and renames it over the path. */
function putInPlace(dbPath: string, partial: string, action: DbAction): LineageMarks {
  const db = new Database(partial);
  let marks: LineageMarks;
  try {
    db.pragma('journal_mode = DELETE');
    marks = marksOf(db);
    db.transaction(() => {
      writeMeta(db, META_DB_ACTION, action);
      if (hasTable(db, 'lineage_log')) logLineage(db, action.at, `db:${action.action}`, { ...action });
    })();
  } finally {
    db.close();
  }
  syncFile(partial);
  renameSync(partial, dbPath);
  syncDir(dirname(resolve(dbPath)));
  return marks;
}

/** Puts `backupFile` in place of the database (the service stopped); keeps what it replaces. */
export function restoreDatabase(dbPath: string, backupFile: string, now: number): PutInPlaceOutcome {
  if (!existsSync(backupFile)) throw new DbFileError(`no file at ${backupFile}`);
  if (resolve(backupFile) === resolve(dbPath)) throw new DbFileError('the backup is the database itself');
  const lock = acquireInstanceLock(dbPath);
  try {
    try {
      const backup = new Database(backupFile, { readonly: true, fileMustExist: true });
      try {
        const problems = integrity(backup);
        if (problems.length > 0) throw new DbFileError(`${backupFile} fails its integrity check: ${problems.slice(0, 3).join('; ')}`);
        marksOf(backup);
      } finally {
        backup.close();
      }
    } catch (err) {
      if (err instanceof DbFileError) throw err;
      throw new DbFileError(`${backupFile} is not a vendgate database: ${err instanceof Error ? err.message : String(err)}`);
    }
    refuseDiscardedWal(dbPath, 'replacing the database');
    const replaced = currentMarks(dbPath);
    const partial = `${dbPath}.restore-partial`;
    rmSync(partial, { force: true });
    copyFileSync(backupFile, partial);
    const keptAt = keepCurrent(dbPath, now);
    const action: DbAction = { action: 'restore', at: now, replaced, keptAt, from: resolve(backupFile) };
    return { keptAt, replaced, marks: putInPlace(dbPath, partial, action) };
  } finally {
    lock.release();
  }
}

/** Puts a new empty database in place (the service stopped); keeps what it replaces. */
export function replaceDatabase(dbPath: string, now: number): PutInPlaceOutcome {
  const lock = acquireInstanceLock(dbPath);
  try {
    refuseDiscardedWal(dbPath, 'replacing the database');
    const replaced = currentMarks(dbPath);
    const partial = `${dbPath}.replace-partial`;
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${partial}${suffix}`, { force: true });
    openDatabase(partial).close();
    const keptAt = keepCurrent(dbPath, now);
    return { keptAt, replaced, marks: putInPlace(dbPath, partial, { action: 'replace', at: now, replaced, keptAt }) };
  } finally {
    lock.release();
  }
}
