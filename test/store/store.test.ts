import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase, databaseId, listMigrations, durably, prepared } from '../../src/store/index.js';
import { tempDirPerTest } from '../helpers/temp.js';

describe('store', () => {
  const dir = tempDirPerTest();

  it('creates the contract tables, WAL and foreign keys, and records the migration in user_version', () => {
    const db = openDatabase(join(dir(), 'a.db'));
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['orders', 'invoice_status_ledger', 'webhook_events', 'vend_jobs', 'refunds', 'outbox']));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('user_version', { simple: true })).toBe(listMigrations().at(-1)!.version);
    db.close();
  });

  it('prepares a statement once per connection and reuses it, and never across connections', () => {
    const a = openDatabase(join(dir(), 'a.db'));
    const b = openDatabase(join(dir(), 'b.db'));
    const sql = "SELECT value FROM meta WHERE key = 'db_id'";
    const first = prepared(a, sql);
    expect(prepared(a, sql)).toBe(first);
    expect(prepared(b, sql)).not.toBe(first);
    // Each answers from its own file.
    expect(prepared(a, sql).get()).toEqual({ value: databaseId(a) });
    expect(prepared(b, sql).get()).toEqual({ value: databaseId(b) });
    a.close();
    b.close();
  });

  it('keeps its database id across reopenings and makes a new one for a new database', () => {
    const path = join(dir(), 'a.db');
    const first = openDatabase(path);
    const id = databaseId(first);
    first.close();
    const again = openDatabase(path);
    expect(databaseId(again)).toBe(id);
    again.close();
    const other = openDatabase(join(dir(), 'b.db'));
    expect(databaseId(other)).not.toBe(id);
    other.close();
  });

  it('(invoice, status) is recorded at most once', () => {
    const db = openDatabase(join(dir(), 'a.db'));
    db.prepare(
      "INSERT INTO orders (reference, idempotency_key, source, item_name, amount, currency, livemode, provider, capture_mode, state, created_at, updated_at) VALUES ('r', 'k', 'kiosk', 'x', 1, 'MNT', 0, 'sandbox', 'automatic', 'awaiting_payment', 0, 0)",
    ).run();
    const insert = db.prepare(
      "INSERT INTO invoice_status_ledger (invoice_id, status, order_id, provider_status, channel, observed_at, evidence) VALUES ('i', 'paid', 1, 'paid', 'poll', 0, '{}') ON CONFLICT DO NOTHING",
    );
    expect(insert.run().changes).toBe(1);
    expect(insert.run().changes).toBe(0);
    db.close();
  });

  it('a durable transaction is visible to another connection once it returns, and synchronous is back to NORMAL', () => {
    const path = join(dir(), 'a.db');
    const db = openDatabase(path);
    durably(db, () => db.prepare("INSERT INTO meta (key, value) VALUES ('x', 'y')").run(), 'invoice_attach');
    expect(db.pragma('synchronous', { simple: true })).toBe(1);
    const reader = new Database(path, { readonly: true });
    expect(reader.prepare("SELECT value FROM meta WHERE key = 'x'").get()).toEqual({ value: 'y' });
    reader.close();
    db.close();
  });

  it('a failed migration leaves the database at its previous version', () => {
    const path = join(dir(), 'a.db');
    const db = openDatabase(path);
    const version = db.pragma('user_version', { simple: true });
    expect(() =>
      db.transaction(() => {
        db.exec('CREATE TABLE t (x)');
        db.exec('THIS IS NOT SQL');
      })(),
    ).toThrow();
    expect(db.pragma('user_version', { simple: true })).toBe(version);
    expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 't'").get()).toEqual({ n: 0 });
    db.close();
  });
});
