import Database from 'better-sqlite3';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { openDatabase, type Db } from '../../src/store/index.js';

let template: string | null = null;

/** Every migration applied once per test worker, into a file the worker removes when it exits. */
function migratedTemplate(): string {
  if (template && existsSync(template)) return template;
  const path = join(tmpdir(), `vendgate-migrated-${process.pid}-${threadId}-${randomBytes(4).toString('hex')}.db`);
  openDatabase(path).close();
  process.once('exit', () => rmSync(path, { force: true }));
  template = path;
  return path;
}

/**
 * `openDatabase(path)` as the service opens it, faster for a file that does not exist yet: a copy of
 * a database every migration was applied to (built once per worker), with a database id of its own.
 * Migrating a new file takes ~50 ms, a copy ~8; the suites that build a device per run (the property
 * world, every `buildCore`) build hundreds. A file that exists is opened (and migrated) as it is:
 * the migrations' own tests open theirs with `openDatabase`.
 */
export function openMigrated(path: string): Db {
  if (path === ':memory:' || existsSync(path)) return openDatabase(path);
  mkdirSync(dirname(path), { recursive: true });
  copyFileSync(migratedTemplate(), path);
  const db = openDatabase(path);
  db.prepare("UPDATE meta SET value = ? WHERE key = 'db_id'").run(randomBytes(3).toString('hex'));
  db.prepare("UPDATE meta SET value = ? WHERE key = 'created_at'").run(new Date().toISOString());
  return db;
}

/**
 * The rows `sql` returns from the database file at `path`, read over a read-only connection of its
 * own, closed again (WAL lets it read while a running service writes).
 */
export function readRows<T = Record<string, any>>(path: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}
