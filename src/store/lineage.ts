import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Db } from './open.js';
import { databaseId } from './open.js';

/**
 * The lineage of the database: which database this is (its id) and how far it has come (the
 * high-water marks of its orders and of its events, AUTOINCREMENT counters that never go down).
 * Kept in three places, so that no single file that goes with the SD card decides alone:
 *
 * - inside the database (`meta` rows and `lineage_log`, migration 009), so it travels with every
 *   copy of it, and every backup `vendgate db backup` makes carries a mark saying it is a backup;
 * - beside it (`<database>.lineage`), written at each start and after each checkpoint;
 * - at the provider (the order references of its invoices name this device, this database and the
 *   order number), read at each start where the provider has an Events API
 *   (src/store/lineage-verdict.ts weighs the three).
 *
 * The machine's identity is kept in the database too: another identity means the card was cloned
 * or moved.
 */

/** Where a database stands: its id and its high-water marks. */
export interface LineageMarks {
  dbId: string;
  /** Highest order id ever given (orders never reuse an id). */
  orders: number;
  /** Highest outbox sequence ever given (every event and alarm raises it). */
  events: number;
  /** Sum of every AUTOINCREMENT counter (the mark of earlier releases). */
  highWater: number;
}

export const META_LINEAGE = 'lineage';
/** Written into a copy by `vendgate db backup`: the copy is a backup, and when it was taken. */
export const META_BACKUP = 'lineage_backup';
/** Written into the new database by `vendgate db restore|replace`: what it replaced. Consumed by the next start. */
export const META_DB_ACTION = 'lineage_db_action';
/** When this database's current life began on this device (ms): commands signed before it are refused. */
export const META_EPOCH = 'lineage_epoch';
const META_MACHINE = 'lineage_machine';
const META_RESTORED = 'lineage_restored_at_seq';

function sequence(db: Db, table: string): number {
  const row = db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').get(table) as { seq: number } | undefined;
  return row?.seq ?? 0;
}

/** The database's own marks, read from it. */
export function marksOf(db: Db): LineageMarks {
  const highWater = (db.prepare('SELECT coalesce(sum(seq), 0) AS n FROM sqlite_sequence').get() as { n: number }).n;
  return { dbId: databaseId(db), orders: sequence(db, 'orders'), events: sequence(db, 'outbox'), highWater };
}

export function readMeta<T>(db: Db, key: string): T | null {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
  if (!row) return null;
  try {
    return JSON.parse(row.value) as T;
  } catch {
    return null;
  }
}

export function writeMeta(db: Db, key: string, value: unknown): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    key,
    JSON.stringify(value),
  );
}

export function deleteMeta(db: Db, key: string): void {
  db.prepare('DELETE FROM meta WHERE key = ?').run(key);
}

/** One line of the database's own history (migration 009). */
export function logLineage(db: Db, at: number, kind: string, detail: Record<string, unknown>): void {
  db.prepare('INSERT INTO lineage_log (at, kind, detail) VALUES (?, ?, ?)').run(at, kind, JSON.stringify(detail));
}

/** The Pi's board serial when there is one, else systemd's machine id, else the host name. */
export function machineIdentity(): string {
  for (const path of ['/sys/firmware/devicetree/base/serial-number', '/etc/machine-id']) {
    try {
      const value = readFileSync(path, 'utf8').replace(/\0/g, '').trim();
      if (value) return value;
    } catch {
      // not on this machine
    }
  }
  return `host:${hostname()}`;
}

/** Records the machine the database runs on; returns the one it ran on before (null the first time). */
export function recordMachine(db: Db, machine: string): string | null {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(META_MACHINE) as { value: string } | undefined;
  const stored = row?.value ?? null;
  if (stored !== machine)
    db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
      META_MACHINE,
      machine,
    );
  return stored;
}

export function lineagePath(dbPath: string): string {
  return `${dbPath}.lineage`;
}

/** The side mark, or null when there is none (or it is not readable). Marks of earlier releases have only dbId and highWater. */
export function readSideMark(dbPath: string): LineageMarks | null {
  const path = lineagePath(dbPath);
  if (!existsSync(path)) return null;
  try {
    const mark = JSON.parse(readFileSync(path, 'utf8')) as Partial<Record<keyof LineageMarks, unknown>>;
    const count = (value: unknown): number | null => (typeof value === 'number' && Number.isInteger(value) ? value : null);
    const highWater = count(mark.highWater);
    if (typeof mark.dbId !== 'string' || highWater === null) return null;
    return { dbId: mark.dbId, highWater, orders: count(mark.orders) ?? 0, events: count(mark.events) ?? 0 };
  } catch {
    return null;
  }
}

/**
 * Written to a temporary file, then renamed over the old one: never half a mark. Synced at start
 * (and by `vendgate db`); after a checkpoint a mark lost to a power cut merely makes a detection
 * rest on the provider's records instead.
 */
export function writeSideMark(dbPath: string, marks: LineageMarks, sync: boolean): void {
  const path = lineagePath(dbPath);
  const text = JSON.stringify(marks);
  // A restart where nothing moved (the usual one) finds the same mark: it is made durable where it is
  // (an fsync of a file with nothing dirty writes nothing) instead of written, renamed and synced again.
  if (sync && sameText(path, text)) {
    const existing = openSync(path, 'r');
    try {
      fsyncSync(existing);
    } finally {
      closeSync(existing);
    }
    return;
  }
  const temporary = `${path}.tmp`;
  const fd = openSync(temporary, 'w', 0o640);
  try {
    writeSync(fd, text);
    if (sync) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}

function sameText(path: string, text: string): boolean {
  try {
    return readFileSync(path, 'utf8') === text;
  } catch {
    return false;
  }
}

/** After a checkpoint: the side mark follows the database (a no-op when it has not moved). */
export function recordLineage(db: Db, dbPath: string, last: { highWater: number }): void {
  if (dbPath === ':memory:') return;
  const marks = marksOf(db);
  if (marks.highWater === last.highWater) return;
  last.highWater = marks.highWater;
  writeSideMark(dbPath, marks, false);
}

/**
 * Records where the restored database stood: every row up to these AUTOINCREMENT counters was
 * written before the backup was taken, and whatever happened to it after (a vend, a refund) is
 * gone from this copy. Kept for good: a later restart does not forget it.
 */
export function markRestored(db: Db): void {
  const rows = db.prepare('SELECT name, seq FROM sqlite_sequence').all() as { name: string; seq: number }[];
  writeMeta(db, META_RESTORED, Object.fromEntries(rows.map((row) => [row.name, row.seq])));
}

/** The highest id of `table` that a restored database already held when it came back, or null. */
export function restoredBoundary(db: Db, table: string): number | null {
  const boundary = readMeta<Record<string, number>>(db, META_RESTORED)?.[table];
  return typeof boundary === 'number' ? boundary : null;
}

/** Whether this database ever came back from a backup (or lost its WAL): `markRestored` ran, once and for good. */
export function wasRestored(db: Db): boolean {
  return db.prepare('SELECT 1 FROM meta WHERE key = ?').get(META_RESTORED) !== undefined;
}

/**
 * When this database's current life began on this device, in ms: its first start, or the start
 * that found it restored or replaced. A signed command issued before it was meant for another
 * database (or another life of this one): refused. Null before the first start of this release.
 */
export function databaseEpoch(db: Db): number | null {
  const value = readMeta<number>(db, META_EPOCH);
  return typeof value === 'number' ? value : null;
}
