import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Db } from './open.js';
import { databaseId } from './open.js';

/**
 * Notices a database that is not the one this machine last ran on: restored from an older copy (a
 * backup, an SD card image) or moved to another machine (a cloned card). A small file beside the
 * database keeps its high-water mark (the sum of its AUTOINCREMENT counters, which never go down:
 * every order and every outbox row raise it), written at each start and after each checkpoint. A
 * database below the mark is older than one this machine already ran: restored. The machine's
 * identity is kept in the database: another identity means the card was cloned or moved.
 */

export interface LineageFinding {
  restored: boolean;
  cloned: boolean;
  /** Plain words for the log, the alarm and the selftest. */
  detail: string | null;
}

interface Mark {
  dbId: string;
  highWater: number;
}

const META_MACHINE = 'lineage_machine';

function highWater(db: Db): number {
  return (db.prepare('SELECT coalesce(sum(seq), 0) AS n FROM sqlite_sequence').get() as { n: number }).n;
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

export function lineagePath(dbPath: string): string {
  return `${dbPath}.lineage`;
}

function readMark(path: string): Mark | null {
  if (!existsSync(path)) return null;
  try {
    const mark = JSON.parse(readFileSync(path, 'utf8')) as Partial<Mark>;
    return typeof mark.dbId === 'string' && Number.isInteger(mark.highWater) ? { dbId: mark.dbId, highWater: mark.highWater! } : null;
  } catch {
    return null;
  }
}

/**
 * Written to a temporary file, then renamed over the old one: never half a mark. Synced only at
 * start: after a checkpoint a mark lost to a power cut merely makes the detection later, and the
 * references (a nonce per order) never depended on it.
 */
function writeMark(path: string, mark: Mark, sync: boolean): void {
  const temporary = `${path}.tmp`;
  const fd = openSync(temporary, 'w', 0o640);
  try {
    writeSync(fd, JSON.stringify(mark));
    if (sync) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}

/** After a checkpoint: the mark follows the database (a no-op when it has not moved). */
export function recordLineage(db: Db, dbPath: string, last: { highWater: number }): void {
  if (dbPath === ':memory:') return;
  const now = highWater(db);
  if (now === last.highWater) return;
  last.highWater = now;
  writeMark(lineagePath(dbPath), { dbId: databaseId(db), highWater: now }, false);
}

/**
 * Called once per start of the service, before anything else is written. Advances the generation
 * in the database, then in the file beside it, and says what it found.
 */
export function checkLineage(
  db: Db,
  dbPath: string,
  machine = machineIdentity(),
  options: { discardedWal?: string | null } = {},
): LineageFinding & { highWater: number } {
  const dbId = databaseId(db);
  const get = db.prepare('SELECT value FROM meta WHERE key = ?');
  const storedMachine = (get.get(META_MACHINE) as { value: string } | undefined)?.value ?? null;
  const mark = dbPath === ':memory:' ? null : readMark(lineagePath(dbPath));
  const current = highWater(db);

  const behind = mark !== null && mark.dbId === dbId && current < mark.highWater;
  // A WAL SQLite discarded (store/wal.ts) took the commits since the last checkpoint with it: the
  // same hazard as a backup put back, so the same path.
  const restored = behind || Boolean(options.discardedWal);
  const cloned = storedMachine !== null && storedMachine !== machine;
  if (storedMachine !== machine)
    db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
      META_MACHINE,
      machine,
    );
  if (restored) markRestored(db);
  if (dbPath !== ':memory:') writeMark(lineagePath(dbPath), { dbId, highWater: current }, true);

  const details: string[] = [];
  if (behind)
    details.push(
      `the database is older than one this machine already ran (high-water ${current} < ${mark!.highWater}): restored from a backup or an image`,
    );
  if (options.discardedWal)
    details.push(`the write-ahead log was unreadable and SQLite discarded it (${options.discardedWal}): the newest commits are lost`);
  if (cloned) details.push('the database was last used on another machine (a cloned or moved SD card)');
  return { restored, cloned, detail: details.length ? details.join('; ') : null, highWater: current };
}

const META_RESTORED = 'lineage_restored_at_seq';

/**
 * Records where the restored database stood: every row up to these AUTOINCREMENT counters was
 * written before the backup was taken, and whatever happened to it after (a vend, a refund) is
 * gone from this copy. Kept for good: a later restart does not forget it.
 */
export function markRestored(db: Db): void {
  const rows = db.prepare('SELECT name, seq FROM sqlite_sequence').all() as { name: string; seq: number }[];
  const boundary = Object.fromEntries(rows.map((row) => [row.name, row.seq]));
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    META_RESTORED,
    JSON.stringify(boundary),
  );
}

/** The highest id of `table` that a restored database already held when it came back, or null. */
export function restoredBoundary(db: Db, table: string): number | null {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(META_RESTORED) as { value: string } | undefined;
  if (!row) return null;
  const boundary = (JSON.parse(row.value) as Record<string, number>)[table];
  return typeof boundary === 'number' ? boundary : null;
}

/** Whether this database ever came back from a backup (or lost its WAL): `markRestored` ran, once and for good. */
export function wasRestored(db: Db): boolean {
  return db.prepare('SELECT 1 FROM meta WHERE key = ?').get(META_RESTORED) !== undefined;
}
