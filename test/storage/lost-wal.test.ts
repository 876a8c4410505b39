import { copyFileSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { cleanup, stop } from '../helpers/cleanup.js';
import { postJson as post, startService, type Service } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

/**
 * A write-ahead log SQLite discards (garbage on a failing card) and a database behind its
 * lineage mark (an older copy put back) both lose commits the machine acted on, so both take the
 * restored-database path: the `database_restored` alarm, the boundary that parks every order the
 * copy held instead of vending it, and reconciliation with the provider.
 */
describe('commits lost beneath the service take the restored-database path', () => {
  const defer = cleanup();

  const order = (svc: Service) => post(`${svc.localUrl}/api/orders`, { slot: 'A1' });

  /** A service on a fresh directory (`<prefix>…`), one order made on it, then stopped by `signal`. */
  async function oneOrderThenStopped(prefix: string, signal: NodeJS.Signals): Promise<{ svc: Service; dir: string }> {
    const dir = defer(tempDir(prefix), (d) => d.cleanup()).path;
    const svc = defer(await startService({ dir }), stop);
    expect((await order(svc)).status).toBe(201);
    await svc.kill(signal);
    return { svc, dir };
  }

  /**
   * What the restored-database path left: the warning (the alarm `database_restored` carries the same
   * detail; reconciliation clears it once every recent invoice is compared, so the log line is what
   * is looked at), the raised alarm's outbox event, and the boundary in meta, which stays for good.
   */
  function restoredState(service: Service) {
    const db = new Database(service.dbPath, { readonly: true });
    try {
      return {
        warnings: service
          .logs()
          .filter((l) => l.msg === 'database: restored from a backup' && l.lineage === 'restored')
          .map((l) => l.detail as string),
        boundary: (db.prepare("SELECT value FROM meta WHERE key = 'lineage_restored_at_seq'").get() as { value: string } | undefined)
          ?.value,
      };
    } finally {
      db.close();
    }
  }

  it('a garbage WAL: logged with a copy kept, database_restored raised, the restored boundary set', async () => {
    // A power cut: the order's commits are in the WAL only (no checkpoint yet).
    const { svc, dir } = await oneOrderThenStopped('vendgate-wal-', 'SIGKILL');
    const walPath = `${svc.dbPath}-wal`;
    const size = statSync(walPath).size;
    expect(size).toBeGreaterThan(32);
    const garbage = Buffer.alloc(size);
    for (let i = 0; i < size; i += 1) garbage[i] = (i * 7919 + 13) & 0xff;
    writeFileSync(walPath, garbage);

    await svc.restart();
    const logged = svc.logs().find((l) => l.msg === 'the write-ahead log is unreadable: SQLite discards it');
    expect(logged).toMatchObject({ wal: walPath, bytes: size });
    expect(readFileSync(logged!.copy as string)).toEqual(garbage);
    expect(readdirSync(dir).some((name) => name.startsWith('vendgate.db-wal.discarded-'))).toBe(true);

    const state = restoredState(svc);
    expect(state.warnings).toHaveLength(1);
    expect(state.warnings[0]).toContain('write-ahead log was unreadable');
    expect(state.boundary).toBeDefined();
  });

  it('a database behind its lineage mark (an older copy put back): database_restored raised, the restored boundary set', async () => {
    const { svc, dir } = await oneOrderThenStopped('vendgate-behind-', 'SIGTERM');
    const backup = join(dir, 'backup.db');
    copyFileSync(svc.dbPath, backup);
    await svc.restart();
    expect((await order(svc)).status).toBe(201);
    await svc.kill('SIGTERM');
    expect(restoredState(svc).warnings).toHaveLength(0);

    copyFileSync(backup, svc.dbPath);
    rmSync(`${svc.dbPath}-wal`, { force: true });
    rmSync(`${svc.dbPath}-shm`, { force: true });
    await svc.restart();
    const state = restoredState(svc);
    expect(state.warnings).toHaveLength(1);
    expect(state.warnings[0]).toContain('older than one this device already ran');
    expect(state.warnings[0]).toMatch(/: 1 order and \d+ events behind/);
    expect(state.boundary).toBeDefined();
  });
});
