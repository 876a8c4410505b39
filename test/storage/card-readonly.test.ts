import { describe, expect, it } from 'vitest';
import { mountExt4 } from '../helpers/mounts.js';
import { waitFor } from '../helpers/wait.js';
import { orderRefusedForStorage, serviceOnFaultyDisk, startOnce, storageUnhealthy, vendFiring } from './harness.js';

/**
 * A card the kernel turned read-only: ext4 on a loop device mounted errors=remount-ro,
 * failed through the kernel's own error path while a vend is firing (a plain remount,ro is refused
 * while the database is open). The service keeps running, keeps the vend's outcome and says so,
 * refuses new orders with VG_ERR_STORAGE, names the card in /healthz and publishes
 * `storage_readonly` retained. A start on that card then stops with one fatal line and exit 74.
 */
describe('an SD card that the kernel turns read-only', () => {
  const { deviceId, disk: card, alarm: retainedAlarm, start } = serviceOnFaultyDisk('storage-ro', () => mountExt4(64));

  it('keeps running and says why; a start on the card then stops with exit 74 and one line', async () => {
    const { svc, dbPath } = await start({ ballastMb: 1, vendMs: 4_000 });
    const url = svc.localUrl;
    const created = await vendFiring(svc);

    card().failFileSystem();

    // The machine delivered; the card will not take the record: kept in memory, retried, and said.
    const kept = await svc.waitFor(() => svc.logs().find((l) => l.msg === 'the card refused the vend outcome: kept in memory, retrying'), {
      what: 'the vend outcome kept in memory',
    });
    expect(kept).toMatchObject({ orderId: created.orderId, outcome: 'vended' });
    expect(svc.readSimLog().filter((l) => l.orderId === created.orderId)).toHaveLength(1);
    expect(svc.pid).not.toBeNull();

    expect(await orderRefusedForStorage(url, dbPath)).toContain('read-only');
    expect((await storageUnhealthy(url)).storage!.detail).toContain('read-only');

    const alarm = await waitFor(() => retainedAlarm('storage_readonly'), {
      timeoutMs: 20_000,
      what: 'storage_readonly on the broker',
    });
    expect(JSON.parse(alarm)).toMatchObject({ name: 'storage_readonly', severity: 'critical', path: dbPath, deviceId });

    // Stopping with the outcome still unwritten: the journal says what happened to which order.
    await svc.kill('SIGTERM');
    expect(svc.logs().find((l) => l.level === 'fatal' && l.orderId === created.orderId)).toMatchObject({ outcome: 'vended' });

    // A start on the read-only card: one fatal line naming the file, the cause and the next step; exit 74.
    const result = await startOnce(svc.configPath);
    expect(result.code).toBe(74);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(dbPath);
    expect(lines[0]).toContain('read-only');
    expect(lines[0]).toMatch(/Next: .*replace the SD card/);
  });
});
