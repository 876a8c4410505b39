import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NEW_DATABASE_PAGE_SIZE, PAGE_CACHE_KIB, openDatabase } from '../../src/store/index.js';
import { tempDirPerTest } from '../helpers/temp.js';

/** The WAL holds whole pages: small pages are fewer bytes written per commit (scripts/bench/fsync.mjs). */
describe('page size', () => {
  const dir = tempDirPerTest();

  it('creates a new database with 1 KiB pages, in WAL mode', () => {
    const db = openDatabase(join(dir(), 'vendgate.db'));
    expect(db.pragma('page_size', { simple: true })).toBe(1024);
    expect(NEW_DATABASE_PAGE_SIZE).toBe(1024);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('keeps the SQLite page cache of each connection at 512 KiB, read-only ones too', () => {
    const path = join(dir(), 'vendgate.db');
    const db = openDatabase(path);
    expect(PAGE_CACHE_KIB).toBe(512);
    expect(db.pragma('cache_size', { simple: true })).toBe(-512);
    const reader = openDatabase(path, { readonly: true });
    expect(reader.pragma('cache_size', { simple: true })).toBe(-512);
    reader.close();
    db.close();
  });

  it('keeps the page size of an existing database, and migrates it as before', () => {
    const path = join(dir(), 'old.db');
    const old = new Database(path);
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE earlier (id INTEGER PRIMARY KEY)');
    expect(old.pragma('page_size', { simple: true })).toBe(4096);
    old.close();
    const db = openDatabase(path);
    expect(db.pragma('page_size', { simple: true })).toBe(4096);
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThan(0);
    db.close();
  });
});
