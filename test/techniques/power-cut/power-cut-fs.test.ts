import { spawn } from 'node:child_process';
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { mountPowerCutFs, type PowerCutFs } from '../../helpers/power-cut-fs.js';
import { waitFor } from '../../helpers/wait.js';

/** The harness itself: a cut loses exactly what was not synced, for plain files and for SQLite's WAL. */

let fs: PowerCutFs | null = null;
afterEach(async () => {
  await fs?.unmount();
  fs = null;
});

function write(path: string, text: string, options: { sync?: boolean; flags?: string } = {}): void {
  const fd = openSync(path, options.flags ?? 'a');
  writeSync(fd, text);
  if (options.sync) fsyncSync(fd);
  closeSync(fd);
}

describe('power-cut file system', () => {
  it('keeps what was fsynced and loses what was not, file by file', async () => {
    fs = await mountPowerCutFs();
    const a = join(fs.path, 'a');
    const b = join(fs.path, 'b');
    write(a, 'synced', { sync: true });
    write(a, '+unsynced');
    write(b, 'never synced');
    const c = join(fs.path, 'c');
    write(c, '0123456789', { sync: true });
    const fd = openSync(c, 'r+');
    ftruncateSync(fd, 4);
    closeSync(fd);
    // Before the cut every write is visible, as in the page cache.
    expect(readFileSync(a, 'utf8')).toBe('synced+unsynced');
    expect(readFileSync(c, 'utf8')).toBe('0123');

    await fs.cut();

    expect(readFileSync(a, 'utf8')).toBe('synced');
    expect(readFileSync(b, 'utf8')).toBe('');
    expect(readFileSync(c, 'utf8')).toBe('0123456789');
  });

  it('names are kept at once: a rename and an unlink survive the cut, with the synced content', async () => {
    fs = await mountPowerCutFs();
    const tmp = join(fs.path, 'x.tmp');
    write(tmp, 'content', { sync: true });
    renameSync(tmp, join(fs.path, 'x'));
    write(join(fs.path, 'gone'), 'bye', { sync: true });
    unlinkSync(join(fs.path, 'gone'));
    await fs.cut();
    expect(readFileSync(join(fs.path, 'x'), 'utf8')).toBe('content');
    expect(existsSync(tmp)).toBe(false);
    expect(existsSync(join(fs.path, 'gone'))).toBe(false);
  });

  it('SQLite in WAL mode: a commit at synchronous=FULL survives, the NORMAL commit after it does not', async () => {
    fs = await mountPowerCutFs();
    const dbPath = join(fs.path, 'x.db');
    const script = `
      const Database = require('better-sqlite3');
      const db = new Database(${JSON.stringify(dbPath)});
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.exec('CREATE TABLE t (v TEXT)');
      db.prepare("INSERT INTO t VALUES ('full')").run();
      db.pragma('synchronous = NORMAL');
      db.prepare("INSERT INTO t VALUES ('normal')").run();
      console.log('committed');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await waitFor(() => out.includes('committed'), { what: 'the child to commit' });
    // Another reader sees both commits while the power is on.
    const before = new Database(dbPath, { readonly: true });
    expect(before.prepare('SELECT v FROM t ORDER BY rowid').pluck().all()).toEqual(['full', 'normal']);
    before.close();
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;

    await fs.cut();

    const after = new Database(dbPath);
    expect(after.prepare('SELECT v FROM t ORDER BY rowid').pluck().all()).toEqual(['full']);
    expect(after.pragma('integrity_check', { simple: true })).toBe('ok');
    after.close();
  });
});
