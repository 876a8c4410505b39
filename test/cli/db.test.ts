import { copyFileSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { cli, order, orderReaches, pay, query } from '../catalog/helpers.js';

/**
 * `vendgate db backup|restore|replace`: the technician's way to put a database in place, instead of
 * moving files by hand. The compiled CLI on the compiled service's real SQLite files: the backup
 * carries its own mark, a restore or a replacement keeps what it replaces and records what it did,
 * and the next start says so in its one line and raises the alarm.
 */
const defer = cleanup();

async function sell(s: Service): Promise<{ orderId: number }> {
  const created = await order(s, 'A1');
  await pay(created.body.payUrl);
  await orderReaches(s, created.body.orderId, 'vended');
  return { orderId: created.body.orderId as number };
}

/** The service (device `id`, this process's) after one sale. */
async function serviceThatSold(id: string): Promise<Service> {
  const svc = defer(await startService({ config: { device: { id: `${id}-${process.pid}` } } }), stop);
  await sell(svc);
  return svc;
}

/** Starts the stopped service again: the lines its start logged about the database it found. */
async function restartedLineage(s: Service) {
  const from = s.logs().length;
  await s.restart();
  return s
    .logs()
    .slice(from)
    .filter((line) => /^database: /.test(String(line.msg)));
}

const databaseFiles = (dbPath: string) =>
  readdirSync(dirname(dbPath))
    .filter((name) => name.startsWith(basename(dbPath)) && !name.endsWith('.lock'))
    .map((name) => join(dirname(dbPath), name));

describe('vendgate db', { timeout: 120_000 }, () => {
  it('backup while selling; restore onto a new card refused while the service runs, then done: the start says restored', async () => {
    const svc = await serviceThatSold('db-a');
    const backupPath = join(svc.dir, 'nightly.db');
    const made = await cli(svc, ['db', 'backup', '--to', backupPath]);
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/backed up .* integrity ok, synced\): database [a-z0-9]+, 1 orders/);
    expect((await cli(svc, ['db', 'backup', '--to', backupPath])).code).toBe(1); // never over a file
    await sell(svc);

    // Under the running service: refused by the instance lock, nothing changed.
    const underService = await cli(svc, ['db', 'restore', backupPath, '--yes']);
    expect(underService.code).toBe(75);
    expect(query(svc, 'SELECT count(*) AS n FROM orders')).toEqual([{ n: 2 }]);
    expect((await cli(svc, ['db', 'restore', backupPath])).code).toBe(64); // without --yes: says what it would do

    // The new card: nothing of the old one, not even the side mark.
    await svc.kill('SIGTERM');
    for (const file of databaseFiles(svc.dbPath)) rmSync(file, { force: true });
    const restored = await cli(svc, ['db', 'restore', backupPath, '--yes']);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain('it replaced no database');
    const lines = await restartedLineage(svc);
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'database: restored from a backup', lineage: 'restored', source: 'vendgate db' }),
    ]);
    expect(lines[0]!.behind.backupTakenAt).toEqual(expect.any(Number));
    await svc.waitFor(() => query(svc, "SELECT 1 FROM alarms WHERE name = 'database_restored'").length === 1, {
      timeoutMs: 15_000,
      what: 'the alarm',
    });
    expect(query(svc, "SELECT kind FROM lineage_log WHERE kind IN ('db:backup', 'db:restore', 'start:restored') ORDER BY id")).toEqual([
      { kind: 'db:backup' },
      { kind: 'db:restore' },
      { kind: 'start:restored' },
    ]);
    // A restart after that continues: the record was consumed.
    await svc.kill('SIGTERM');
    expect(await restartedLineage(svc)).toEqual([expect.objectContaining({ lineage: 'continuing' })]);
  });

  it('replace keeps the old database beside it and the start says replaced, naming it', async () => {
    const svc = await serviceThatSold('db-b');
    const oldId = query<{ value: string }>(svc, "SELECT value FROM meta WHERE key = 'db_id'")[0]!.value;
    await svc.kill('SIGTERM');
    const replaced = await cli(svc, ['db', 'replace', '--yes']);
    expect(replaced.code).toBe(0);
    const kept = /kept: (\S+)/.exec(replaced.stdout)![1]!;
    expect(existsSync(join(kept, 'vendgate.db'))).toBe(true);
    expect(await restartedLineage(svc)).toEqual([
      expect.objectContaining({ msg: 'database: replaced on a device that sold before', source: 'vendgate db', previousDbId: oldId }),
    ]);
    expect(query(svc, "SELECT severity FROM alarms WHERE name = 'database_replaced'")).toEqual([{ severity: 'critical' }]);
    expect(query(svc, 'SELECT count(*) AS n FROM orders')).toEqual([{ n: 0 }]);
  });

  it('a product backup copied over the database by hand still says what it is: its mark inside makes the start say restored', async () => {
    const svc = await serviceThatSold('db-c');
    const backupPath = join(svc.dir, 'copy.db');
    expect((await cli(svc, ['db', 'backup', '--to', backupPath])).code).toBe(0);
    await svc.kill('SIGTERM');
    for (const file of databaseFiles(svc.dbPath)) rmSync(file, { force: true });
    copyFileSync(backupPath, svc.dbPath);
    expect(await restartedLineage(svc)).toEqual([expect.objectContaining({ lineage: 'restored', source: 'backup mark' })]);
  });
});
