import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { fillUp, mountTmpfs } from '../helpers/mounts.js';
import { waitFor } from '../helpers/wait.js';
import {
  alarmsOnTestBroker,
  orderRefusedForStorage,
  post,
  serviceOnFaultyDisk,
  startOnce,
  storageSettings,
  storageUnhealthy,
  vendFiring,
} from './harness.js';

/**
 * A full disk: the database on a small real tmpfs that fills up while a vend is firing.
 * The delivered vend is recorded (the ballast is given back), the service keeps running, new
 * orders are refused with VG_ERR_STORAGE naming the path and the free bytes, /healthz names the
 * disk, and `storage_full` reaches the broker retained although the outbox could not take it.
 * Once space is freed, orders are taken again and the alarm is cleared.
 */
describe('a disk that fills during a vend', () => {
  const { deviceId, disk, alarm: retainedAlarm, start } = serviceOnFaultyDisk('storage-full', () => mountTmpfs(24));

  it('records the delivered vend, refuses new orders as VG_ERR_STORAGE, alarms over MQTT, and recovers when space is freed', async () => {
    // The machine turns long enough for the test to fill the disk meanwhile (the fill takes milliseconds).
    const { svc, dbPath } = await start({ ballastMb: 2, vendMs: 4_000 });
    const url = svc.localUrl;
    const created = await vendFiring(svc);

    const filler = join(disk().dir, 'filler');
    expect(fillUp(filler)).toBeGreaterThan(0);

    // The vend that fired is settled: vended, one actuation, the process still running.
    const order = async () => (await (await fetch(`${url}/api/orders/${created.orderId}`)).json()) as { state: string };
    await svc.waitFor(async () => (await order()).state === 'vended', { what: 'the delivered vend to be recorded' });
    expect(svc.readSimLog().filter((l) => l.orderId === created.orderId)).toHaveLength(1);
    expect(svc.pid).not.toBeNull();

    // A new order is refused because of the disk, not the provider.
    await orderRefusedForStorage(url, dbPath);
    expect((await storageUnhealthy(url)).storage!.detail).toContain(dbPath);

    const alarm = await waitFor(() => retainedAlarm('storage_full'), { timeoutMs: 20_000, what: 'storage_full on the broker' });
    expect(JSON.parse(alarm)).toMatchObject({ name: 'storage_full', severity: 'critical', path: dbPath, deviceId });

    // Space freed: orders are taken again, the alarm is cleared on the broker.
    rmSync(filler);
    await svc.waitFor(async () => (await fetch(`${url}/healthz`)).status === 200, { what: '/healthz to be healthy again' });
    const again = await post(`${url}/api/orders`, { slot: 'A2' });
    expect(again.status).toBe(201);
    await waitFor(() => retainedAlarm('storage_full') === '', { timeoutMs: 20_000, what: 'storage_full cleared on the broker' });
  });
});

/**
 * A start on a disk that is already full. With the ballast beside the database the start
 * gives it back and runs in the `full` state: the fault found while the store opens (before the
 * device and its alarms exist) must still put the device out of service, reach the broker and land
 * as an alarm row. Without a ballast the start refuses with one line and exit 74.
 */
describe('a start on a full disk', () => {
  const prefix = `vgtest-${randomBytes(3).toString('hex')}`;
  const { retained, broker } = alarmsOnTestBroker(prefix, '+', `${prefix}-watch`);
  const defer = cleanup();

  /** A service that made its database (and its ballast) on a fresh tmpfs, then stopped; the disk then filled. */
  async function fullDiskAfterAStop(ballastMb: number): Promise<{ svc: Service; dbPath: string; deviceId: string }> {
    const disk = defer(mountTmpfs(24), (d) => d.release());
    const deviceId = `full-start-${randomBytes(3).toString('hex')}`;
    const dbPath = join(disk.dir, 'vendgate.db');
    const svc = defer(
      await startService({ config: storageSettings({ deviceId, dbPath, ballastMb, mqttUrl: broker().url, prefix }) }),
      stop,
    );
    expect((await svc.kill('SIGTERM')).code).toBe(0);
    expect(fillUp(join(disk.dir, 'filler'))).toBeGreaterThan(0);
    return { svc, dbPath, deviceId };
  }

  it('with the ballast: starts full, out of service naming the disk, storage_full retained and its alarm row written', async () => {
    const { svc, dbPath, deviceId } = await fullDiskAfterAStop(2);
    await svc.restart();
    const url = svc.localUrl;

    const refused = await post(`${url}/api/orders`, { slot: 'A1' });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('VG_ERR_STORAGE');

    // The screen: out of service because of the disk, not taking orders to refuse them.
    const state = (await (await fetch(`${url}/api/state`)).json()) as { phase: string; reason: string | null };
    expect(state.reason).toMatch(/^storage: the disk holding .* is full/);
    expect(state.reason).toContain(dbPath);

    const checks = await storageUnhealthy(url);
    expect(checks.service!.ok).toBe(false);
    expect(checks.service!.detail).toContain(dbPath);

    const alarm = await waitFor(() => retained.get(`${prefix}/${deviceId}/alarms/storage_full`), {
      timeoutMs: 20_000,
      what: 'storage_full on the broker',
    });
    expect(JSON.parse(alarm)).toMatchObject({ name: 'storage_full', severity: 'critical', path: dbPath, deviceId });

    // The row: the ballast given back left room for it.
    const db = new Database(dbPath, { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare("SELECT severity, message, detail FROM alarms WHERE name = 'storage_full'").get() as
        { severity: string; message: string; detail: string } | undefined;
      expect(row).toMatchObject({ severity: 'critical' });
      expect(row!.message).toContain(dbPath);
      expect(JSON.parse(row!.detail)).toMatchObject({ path: dbPath });
    } finally {
      db.close();
    }
  });

  it('without a ballast: one line on stderr naming the file, the cause and the next step, exit 74', async () => {
    const { svc, dbPath } = await fullDiskAfterAStop(0);
    const result = await startOnce(svc.configPath);
    expect(result.code).toBe(74);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(dbPath);
    expect(lines[0]).toMatch(/is full \(SQLITE_FULL\), \d+ bytes free/);
    expect(lines[0]).toMatch(/Next: free space/);
  });
});
