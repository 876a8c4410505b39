import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, waitFor, type Service } from '../helpers/service.js';
import { testBroker, type TestBroker } from '../helpers/broker.js';
import { fillUp, mountTmpfs, type Mounted } from '../helpers/mounts.js';

/**
 * Issue 24, a full disk: the database on a small real tmpfs that fills up while a vend is firing.
 * The delivered vend is recorded (the ballast is given back), the service keeps running, new
 * orders are refused with VG_ERR_STORAGE naming the path and the free bytes, /healthz names the
 * disk, and `storage_full` reaches the broker retained although the outbox could not take it.
 * Once space is freed, orders are taken again and the alarm is cleared.
 */
describe('a disk that fills during a vend', () => {
  let disk: Mounted;
  let broker: TestBroker;
  let svc: Service | null = null;
  let watcher: mqtt.MqttClient | null = null;
  const deviceId = `storage-full-${randomBytes(3).toString('hex')}`;
  const prefix = `vgtest-${randomBytes(3).toString('hex')}`;
  const retained = new Map<string, string>();

  beforeAll(async () => {
    disk = mountTmpfs(24);
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
    disk?.release();
  });

  const post = (url: string, body?: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });

  it('records the delivered vend, refuses new orders as VG_ERR_STORAGE, alarms over MQTT, and recovers when space is freed', async () => {
    const dbPath = join(disk.dir, 'vendgate.db');
    svc = await startService({
      config: {
        device: { id: deviceId },
        storage: { path: dbPath, ballastMb: 2 },
        // Long enough for the test to fill the disk while the machine turns (the fill takes milliseconds).
        actuator: { sim: { durationMs: 4_000 } },
        mqtt: { url: broker.url, prefix, telemetryIntervalSec: 3600 },
      },
    });
    const url = svc.localUrl;
    const created = (await (await post(`${url}/api/orders`, { slot: 'A1' })).json()) as { orderId: number; invoiceId: string };
    expect((await post(`${url}/sandbox/pay/${created.invoiceId}`)).status).toBe(204);
    await svc.waitFor(() => svc!.logs().some((l) => l.msg === 'vend firing'), 20_000, 'the vend to fire');

    const filler = join(disk.dir, 'filler');
    expect(fillUp(filler)).toBeGreaterThan(0);

    // The vend that fired is settled: vended, one actuation, the process still running.
    const order = async () => (await (await fetch(`${url}/api/orders/${created.orderId}`)).json()) as { state: string };
    await svc.waitFor(async () => (await order()).state === 'vended', 30_000, 'the delivered vend to be recorded');
    expect(svc.readSimLog().filter((l) => l.orderId === created.orderId)).toHaveLength(1);
    expect(svc.pid).not.toBeNull();

    // A new order is refused because of the disk, not the provider.
    const refused = await post(`${url}/api/orders`, { slot: 'A2' });
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('VG_ERR_STORAGE');
    expect(body.error.message).toContain(dbPath);
    expect(body.error.message).toMatch(/\d+ bytes free/);

    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(503);
    const checks = ((await health.json()) as { checks: Record<string, { ok: boolean; detail: string }> }).checks;
    expect(checks.storage!.ok).toBe(false);
    expect(checks.storage!.detail).toContain(dbPath);
    expect(checks.provider!.ok).toBe(true);

    const alarmTopic = `${prefix}/${deviceId}/alarms/storage_full`;
    const alarm = await waitFor(() => retained.get(alarmTopic), 20_000, 'storage_full on the broker');
    expect(JSON.parse(alarm)).toMatchObject({ name: 'storage_full', severity: 'critical', path: dbPath, deviceId });

    // Space freed: orders are taken again, the alarm is cleared on the broker.
    rmSync(filler);
    await svc.waitFor(async () => (await fetch(`${url}/healthz`)).status === 200, 30_000, '/healthz to be healthy again');
    const again = await post(`${url}/api/orders`, { slot: 'A2' });
    expect(again.status).toBe(201);
    await waitFor(() => retained.get(alarmTopic) === '', 20_000, 'storage_full cleared on the broker');
  });
});
