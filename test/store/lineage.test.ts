import { describe, expect, it } from 'vitest';
import { copyFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  assessLineage,
  databaseEpoch,
  openDatabase,
  readSideMark,
  refineLineage,
  settleLineage,
  wasRestored,
  type Db,
} from '../../src/store/index.js';
import { tempDirPerTest } from '../helpers/temp.js';

/**
 * The lineage verdict on real SQLite files: the marks inside the database and beside it, and the
 * provider's records added. The black-box cases (a card swap under the running service) are in
 * test/techniques/money-edges/lineage.test.ts; these are the rules one by one.
 */
const dir = tempDirPerTest();

const machine = 'test-machine';

/** A start: assess, refine with what the provider says, settle. */
function start(db: Db, path: string, remote: Parameters<typeof refineLineage>[1] = null, now = Date.now()) {
  return settleLineage(db, path, refineLineage(assessLineage(db, path), remote), { now, machine });
}

function addOrders(db: Db, count: number): void {
  // The counter is what the marks read: a row per order is enough, whatever its content.
  for (let i = 0; i < count; i += 1) db.prepare("UPDATE sqlite_sequence SET seq = seq + 1 WHERE name = 'orders'").run();
  if (db.prepare("SELECT 1 FROM sqlite_sequence WHERE name = 'orders'").get() === undefined)
    db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('orders', ?)").run(count);
}

describe('the lineage verdict', () => {
  it('brand new, then continuing; the side mark follows; the epoch is set once', () => {
    const path = join(dir(), 'v.db');
    const db = openDatabase(path);
    expect(start(db, path, null, 1_000).kind).toBe('new');
    expect(databaseEpoch(db)).toBe(1_000);
    addOrders(db, 3);
    const again = start(db, path, null, 2_000);
    expect(again.kind).toBe('continuing');
    expect(databaseEpoch(db)).toBe(1_000);
    expect(readSideMark(path)).toMatchObject({ orders: 3 });
    db.close();
  });

  it('a restart where nothing moved leaves the side mark where it is; one that moved rewrites it', () => {
    const path = join(dir(), 'v.db');
    const db = openDatabase(path);
    start(db, path, null, 1_000);
    addOrders(db, 2);
    start(db, path, null, 2_000);
    const before = statSync(`${path}.lineage`);
    expect(start(db, path, null, 3_000).kind).toBe('continuing');
    const after = statSync(`${path}.lineage`);
    // The same file (no temporary renamed over it), not written again.
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    addOrders(db, 1);
    start(db, path, null, 4_000);
    expect(statSync(`${path}.lineage`).ino).not.toBe(before.ino);
    expect(readSideMark(path)).toMatchObject({ orders: 3 });
    db.close();
  });

  it('a copy behind its side mark: restored, with how many orders behind, and the boundary kept for good', () => {
    const path = join(dir(), 'v.db');
    let db = openDatabase(path);
    start(db, path);
    addOrders(db, 2);
    db.close();
    copyFileSync(path, join(dir(), 'old.db'));
    db = openDatabase(path);
    addOrders(db, 3);
    start(db, path);
    db.close();
    copyFileSync(join(dir(), 'old.db'), path);
    db = openDatabase(path);
    const found = start(db, path, null, 5_000);
    expect(found).toMatchObject({ kind: 'restored', source: 'side mark', behind: { orders: 3 } });
    expect(wasRestored(db)).toBe(true);
    expect(databaseEpoch(db)).toBe(5_000);
    db.close();
  });

  it('the provider knows higher order numbers of this database: restored, even with a side mark from the same moment', () => {
    const path = join(dir(), 'v.db');
    const db = openDatabase(path);
    start(db, path);
    addOrders(db, 1);
    start(db, path);
    const dbId = (db.prepare("SELECT value FROM meta WHERE key = 'db_id'").get() as { value: string }).value;
    expect(start(db, path, { thisDbMaxOrder: 1, otherDbIds: [] }).kind).toBe('continuing');
    expect(start(db, path, { thisDbMaxOrder: 3, otherDbIds: [] })).toMatchObject({
      kind: 'restored',
      source: 'provider records',
      behind: { orders: 2 },
    });
    expect(dbId).toMatch(/^[a-z0-9]+$/);
    db.close();
  });

  it('a new database where the provider holds sales under another: replaced; with no side mark and no records: new', () => {
    const path = join(dir(), 'v.db');
    const db = openDatabase(path);
    expect(refineLineage(assessLineage(db, path), { thisDbMaxOrder: null, otherDbIds: [] }).kind).toBe('new');
    const found = start(db, path, { thisDbMaxOrder: null, otherDbIds: ['0ld1d'] });
    expect(found).toMatchObject({ kind: 'replaced', source: 'provider records', previousDbId: '0ld1d' });
    db.close();
  });

  it('a side mark of another database: replaced, naming it', () => {
    const path = join(dir(), 'v.db');
    let db = openDatabase(path);
    start(db, path);
    const oldId = (db.prepare("SELECT value FROM meta WHERE key = 'db_id'").get() as { value: string }).value;
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
    db = openDatabase(path);
    expect(start(db, path)).toMatchObject({ kind: 'replaced', source: 'side mark', previousDbId: oldId });
    db.close();
  });
});
