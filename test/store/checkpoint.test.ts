import Database from 'better-sqlite3';
import { copyFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCheckpointer, openDatabase, type Db } from '../../src/store/index.js';
import { silentLogger } from '../../src/util/logger.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * What the database file itself holds, without its WAL: a copy of the file alone, opened on its
 * own. A row is there only once a checkpoint has copied it out of the WAL.
 */
function rowsInMainFile(dir: string, path: string): number {
  const copy = join(dir, `copy-${Date.now()}-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(path, copy);
  const db = new Database(copy);
  try {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 't'").get();
    return exists ? (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n : 0;
  } finally {
    db.close();
  }
}

/** Two ticks with nothing in between: whatever opening the database wrote is checkpointed. */
function settle(checkpointer: ReturnType<typeof createCheckpointer>): void {
  checkpointer.tick();
  checkpointer.tick();
}

describe('WAL checkpoints', () => {
  let dir: ReturnType<typeof tempDir>;
  let db: Db;
  let path: string;
  beforeEach(() => {
    dir = tempDir();
    path = join(dir.path, 'vendgate.db');
    db = openDatabase(path);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
  });
  afterEach(() => {
    if (db.open) db.close();
    dir.cleanup();
  });

  const insert = (n: number) => {
    const statement = db.prepare('INSERT INTO t (body) VALUES (?)');
    db.transaction(() => {
      for (let i = 0; i < n; i += 1) statement.run(Buffer.alloc(300, i));
    })();
  };

  it('turns the automatic checkpoint off, so no commit of the service pays for one', () => {
    const checkpointer = createCheckpointer({ db, logger: silentLogger() }, { intervalMs: 60_000 });
    checkpointer.start();
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    // Far past the 1,000 pages at which SQLite would have checkpointed inside a commit.
    for (let i = 0; i < 50; i += 1) insert(400);
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(1_000 * 4_096);
    expect(rowsInMainFile(dir.path, path)).toBe(0);
    checkpointer.stop();
  });

  it('checkpoints once the database has been quiet for a tick, and not while writes keep coming', () => {
    const checkpointer = createCheckpointer({ db, logger: silentLogger() }, { maxChangesBetween: 1_000_000 });
    db.pragma('wal_autocheckpoint = 0');
    settle(checkpointer);
    for (let i = 0; i < 5; i += 1) {
      insert(50);
      expect(checkpointer.tick(), `busy tick ${i}`).toBeNull();
    }
    expect(rowsInMainFile(dir.path, path)).toBe(0);

    const quiet = checkpointer.tick();
    expect(quiet).toMatchObject({ reason: 'quiet' });
    expect(quiet!.checkpointed).toBe(quiet!.walFrames);
    expect(rowsInMainFile(dir.path, path)).toBe(250);
    // Nothing new since: nothing to do.
    expect(checkpointer.tick()).toBeNull();
  });

  it('lets a quiet spell pass without a checkpoint until enough rows changed (one checkpoint for many sparse orders)', () => {
    const checkpointer = createCheckpointer({ db, logger: silentLogger() }, { quietMinChanges: 100, maxChangesBetween: 1_000_000 });
    db.pragma('wal_autocheckpoint = 0');
    settle(checkpointer);
    // Three customers minutes apart: each quiet spell after a sale of 30 rows passes with nothing copied.
    for (let sale = 0; sale < 3; sale += 1) {
      insert(30);
      for (let tick = 0; tick < 3; tick += 1) expect(checkpointer.tick(), `sale ${sale}, tick ${tick}`).toBeNull();
    }
    expect(rowsInMainFile(dir.path, path)).toBe(0);
    // The fourth takes the WAL past 100 changed rows: the next quiet tick checkpoints all four.
    insert(30);
    checkpointer.tick();
    expect(checkpointer.tick()).toMatchObject({ reason: 'quiet' });
    expect(rowsInMainFile(dir.path, path)).toBe(120);
  });

  it('keeps the WAL bounded when writes never stop', () => {
    const checkpointer = createCheckpointer({ db, logger: silentLogger() }, { maxChangesBetween: 300 });
    db.pragma('wal_autocheckpoint = 0');
    settle(checkpointer);
    const reasons: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      insert(100);
      const done = checkpointer.tick();
      if (done) reasons.push(done.reason);
    }
    expect(reasons).toEqual(['bound', 'bound', 'bound']);
    expect(rowsInMainFile(dir.path, path)).toBe(900);
  });

  it('cuts the WAL file back after a burst instead of leaving it at its largest', () => {
    const checkpointer = createCheckpointer({ db, logger: silentLogger() }, { intervalMs: 60_000 });
    checkpointer.start();
    for (let i = 0; i < 100; i += 1) insert(400);
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(8 * 1024 * 1024);
    const done = checkpointer.tick();
    expect(done).toMatchObject({ reason: 'bound' });
    expect(done!.checkpointed).toBe(done!.walFrames);
    // The next write starts the WAL over and truncates the file.
    insert(1);
    expect(statSync(`${path}-wal`).size).toBeLessThanOrEqual(8 * 1024 * 1024);
    checkpointer.stop();
  });

  it('on its timer, copies what a quiet device wrote into the database file', async () => {
    const checkpointer = createCheckpointer({ db, logger: silentLogger() }, { intervalMs: 20 });
    checkpointer.start();
    insert(100);
    await waitFor(() => rowsInMainFile(dir.path, path) === 100, { what: 'the rows to reach the database file' });
    checkpointer.stop();
  });

  it('leaves committed rows in the WAL meanwhile, where the next open reads them (a power cut loses nothing)', () => {
    const checkpointer = createCheckpointer({ db, logger: silentLogger() }, { intervalMs: 60_000 });
    checkpointer.start();
    insert(2_000);
    // A copy of the database and its WAL as they are on disk now (the state a power cut leaves),
    // opened the way the service opens it.
    const crashed = join(dir.path, 'crashed.db');
    copyFileSync(path, crashed);
    copyFileSync(`${path}-wal`, `${crashed}-wal`);
    const reopened = openDatabase(crashed);
    expect((reopened.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n).toBe(2_000);
    reopened.close();
    checkpointer.stop();
  });
});
