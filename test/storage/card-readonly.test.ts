import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { testBroker, type TestBroker } from '../helpers/broker.js';
import { mountExt4 } from '../helpers/mounts.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A card the kernel turned read-only: ext4 on a loop device mounted errors=remount-ro,
 * failed through the kernel's own error path while a vend is firing (a plain remount,ro is refused
 * while the database is open). The service keeps running, keeps the vend's outcome and says so,
 * refuses new orders with VG_ERR_STORAGE, names the card in /healthz and publishes
 * `storage_readonly` retained. A start on that card then stops with one fatal line and exit 74.
 */
const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

describe('an SD card that the kernel turns read-only', () => {
  let card: ReturnType<typeof mountExt4>;
  let broker: TestBroker;
  let svc: Service | null = null;
  let watcher: mqtt.MqttClient | null = null;
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-ro-'));
  const deviceId = `storage-ro-${randomBytes(3).toString('hex')}`;
  const prefix = `vgtest-${randomBytes(3).toString('hex')}`;
  const retained = new Map<string, string>();

  beforeAll(async () => {
    card = mountExt4(64);
    broker = await testBroker();
    watcher = mqtt.connect(broker.url, { clientId: `${deviceId}-watch` });
    watcher.on('message', (topic, payload) => retained.set(topic, payload.toString()));
    await new Promise<void>((resolve, reject) => {
      watcher!.once('connect', () =>
        watcher!.subscribe(`${prefix}/${deviceId}/alarms/#`, { qos: 1 }, (err) => (err ? reject(err) : resolve())),
      );
    });
  });

  afterAll(async () => {
    await svc?.stop();
    await new Promise<void>((resolve) => (watcher ? watcher.end(true, {}, () => resolve()) : resolve()));
    await broker?.close();
    card?.release();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (url: string, body?: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });

  it('keeps running and says why; a start on the card then stops with exit 74 and one line', async () => {
    const dbPath = join(card.dir, 'vendgate.db');
    svc = await startService({
      dir,
      config: {
        device: { id: deviceId },
        storage: { path: dbPath, ballastMb: 1 },
        actuator: { sim: { durationMs: 4_000 } },
        mqtt: { url: broker.url, prefix, telemetryIntervalSec: 3600 },
      },
    });
    const url = svc.localUrl;
    const created = (await (await post(`${url}/api/orders`, { slot: 'A1' })).json()) as { orderId: number; invoiceId: string };
    expect((await post(`${url}/sandbox/pay/${created.invoiceId}`)).status).toBe(204);
    await svc.waitFor(() => svc!.logs().some((l) => l.msg === 'vend firing'), { timeoutMs: 20_000, what: 'the vend to fire' });

    card.failFileSystem();

    // The machine delivered; the card will not take the record: kept in memory, retried, and said.
    const kept = await svc.waitFor(() => svc!.logs().find((l) => l.msg === 'the card refused the vend outcome: kept in memory, retrying'), {
      what: 'the vend outcome kept in memory',
    });
    expect(kept).toMatchObject({ orderId: created.orderId, outcome: 'vended' });
    expect(svc.readSimLog().filter((l) => l.orderId === created.orderId)).toHaveLength(1);
    expect(svc.pid).not.toBeNull();

    const refused = await post(`${url}/api/orders`, { slot: 'A2' });
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('VG_ERR_STORAGE');
    expect(body.error.message).toContain(dbPath);
    expect(body.error.message).toContain('read-only');
    expect(body.error.message).toMatch(/\d+ bytes free/);

    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(503);
    const checks = ((await health.json()) as { checks: Record<string, { ok: boolean; detail: string }> }).checks;
    expect(checks.storage).toMatchObject({ ok: false });
    expect(checks.storage!.detail).toContain('read-only');
    expect(checks.provider!.ok).toBe(true);

    const alarm = await waitFor(() => retained.get(`${prefix}/${deviceId}/alarms/storage_readonly`), {
      timeoutMs: 20_000,
      what: 'storage_readonly on the broker',
    });
    expect(JSON.parse(alarm)).toMatchObject({ name: 'storage_readonly', severity: 'critical', path: dbPath, deviceId });

    // Stopping with the outcome still unwritten: the journal says what happened to which order.
    await svc.kill('SIGTERM');
    expect(svc.logs().find((l) => l.level === 'fatal' && l.orderId === created.orderId)).toMatchObject({ outcome: 'vended' });

    // A start on the read-only card: one fatal line naming the file, the cause and the next step; exit 74.
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN, 'start', '--config', svc!.configPath], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('exit', (code) => resolve({ code, stderr }));
    });
    expect(result.code).toBe(74);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(dbPath);
    expect(lines[0]).toContain('read-only');
    expect(lines[0]).toMatch(/Next: .*replace the SD card/);
  });
});
