import Database from 'better-sqlite3';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

export type Db = Database.Database;

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url).pathname;

/** Page size of a database this code creates (see openDatabase). */
export const NEW_DATABASE_PAGE_SIZE = 1024;

/**
 * SQLite's own page cache per connection, in KiB (its default is 2,000). An order reads and writes
 * the newest rows and the right edges of a few indexes; the rest of the file, when a report or a
 * reconcile reads it, comes from the kernel's page cache as cheaply. With the default the cache
 * filled over the first few thousand orders and stayed resident: about 5 MB more RSS after 5,000
 * orders than with 512 KiB (scripts/bench/resources.mjs, docs/benchmarks.md).
 */
export const PAGE_CACHE_KIB = 512;

export interface OpenOptions {
  /** Read-only connection (the CLI's `orders`, `export`). */
  readonly?: boolean;
  /** Source of randomness for the database id (tests). */
  randomId?: () => string;
}

/**
 * Opens the SQLite file with the pragmas the invariants rely on and applies pending migrations.
 * WAL with synchronous=NORMAL by default; money decisions that must survive a power cut use
 * `durably()` (synchronous=FULL for that commit).
 */
export function openDatabase(path: string, options: OpenOptions = {}): Db {
  if (path !== ':memory:' && !options.readonly) mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  db.pragma('busy_timeout = 5000');
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  if (!options.readonly) {
    // A new database gets 1 KiB pages (SQLite's default is 4 KiB). The WAL holds whole pages, so
    // every commit writes each page it touched in full: an order's dozen small commits touch a few
    // rows in many tables and indexes, and 1 KiB pages write about a third of the bytes per order
    // (scripts/bench/fsync.mjs). Only possible before the first table exists; an existing file
    // keeps its page size.
    if ((db.pragma('page_count', { simple: true }) as number) === 0) db.pragma(`page_size = ${NEW_DATABASE_PAGE_SIZE}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
  }
  db.pragma('foreign_keys = ON');
  if (!options.readonly) migrate(db, options.randomId ?? (() => randomBytes(3).toString('hex')));
  return db;
}

export function listMigrations(): { version: number; file: string }[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((name) => /^\d+_.+\.sql$/.test(name))
    .map((file) => ({ version: Number.parseInt(file, 10), file }))
    .sort((a, b) => a.version - b.version);
}

/** Applies each numbered migration newer than PRAGMA user_version in its own transaction. */
export function migrate(db: Db, randomId: () => string): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (const { version, file } of listMigrations()) {
    if (version <= current) continue;
    const sql = readFileSync(join(MIGRATIONS_DIR, file), 'utf8');
    db.transaction(() => {
      db.exec(sql);
      if (version === 1) {
        // The database id makes order references unique across re-images of the same device.
        db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run('db_id', randomId());
        db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run('created_at', new Date().toISOString());
      }
      db.pragma(`user_version = ${version}`);
    }).immediate();
  }
}

export function databaseId(db: Db): string {
  const row = db.prepare("SELECT value FROM meta WHERE key = 'db_id'").get() as { value: string } | undefined;
  if (!row) throw new Error('database has no db_id: was it migrated?');
  return row.value;
}

const statementCaches = new WeakMap<Db, Map<string, Database.Statement>>();

/**
 * `db.prepare(sql)`, compiled once per connection and kept: for SQL run on every order, poll or
 * publish, where preparing each time costs a parse and a native allocation per call. Not for a
 * statement whose mode is changed (`pluck`, `raw`, `expand`) or that is iterated: those are shared.
 *
 * A row limit is bound as `LIMIT CAST(? AS INTEGER)`, never `LIMIT ?`: SQLite (3.53) plans a bare
 * `LIMIT ?` with the value bound at the time and marks the statement to be compiled again whenever
 * that parameter is bound anew, which better-sqlite3 does on every call. The outbox's read, run
 * about a dozen times per order, was parsed and planned again each time (measured with a breakpoint
 * on sqlite3Reprepare: 1,000 calls, 1,000 recompilations; none with the cast).
 */
export function prepared(db: Db, sql: string): Database.Statement {
  let cache = statementCaches.get(db);
  if (!cache) {
    cache = new Map();
    statementCaches.set(db, cache);
  }
  let statement = cache.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    cache.set(sql, statement);
  }
  return statement;
}

/** Runs `fn` in a BEGIN IMMEDIATE transaction. `fn` must be synchronous (an await would commit early). */
export function inTransaction<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}

/**
 * The money steps that precede an irreversible outside action (or that a person would otherwise
 * have to settle after a power cut). Each commits through `durably()` under its name; the
 * durability test fails when one of them stops doing so.
 */
export type DurableStep =
  | 'invoice_attach'
  | 'order_attempt'
  | 'vend_claim'
  | 'vend_settle'
  | 'refund_claim'
  | 'capture_claim'
  | 'command_claim'
  | 'receipt_claim'
  | 'dex_read';

let commitObserver: ((step: DurableStep, synchronous: number) => void) | null = null;

/** Test seam: told of every durable commit with the synchronous level it ran at (2 = FULL). */
export function observeDurableCommits(observer: ((step: DurableStep, synchronous: number) => void) | null): void {
  commitObserver = observer;
}

/**
 * Runs `fn` in a transaction committed with synchronous=FULL: once it returns, the decision is on
 * disk even if the power is cut next (in WAL mode FULL syncs the WAL at every commit; NORMAL only
 * at checkpoints, so a power cut loses the newest NORMAL commits).
 */
export function durably<T>(db: Db, fn: () => T, step: DurableStep): T {
  db.pragma('synchronous = FULL');
  try {
    const result = db.transaction(fn).immediate();
    commitObserver?.(step, db.pragma('synchronous', { simple: true }) as number);
    return result;
  } finally {
    db.pragma('synchronous = NORMAL');
  }
}
