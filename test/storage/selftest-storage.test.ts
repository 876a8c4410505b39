import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { testBroker, type TestBroker } from '../helpers/broker.js';
import { mountExt4 } from '../helpers/mounts.js';
import { waitFor } from '../helpers/wait.js';
import { post, storageSettings } from './harness.js';

/**
 * "the selftest names the disk": the selftest run inside the service (MQTT cmd/selftest)
 * on a card the kernel turned read-only (ext4 errors=remount-ro, failed through trigger_fs_error).
 * Its `storage` line is the fault the service is in, and its `database` line says the card turned
 * read-only instead of suggesting a chown.
 */
interface Check {
  name: string;
  status: 'PASS' | 'WARN' | 'FAIL';
  detail: string;
  hint?: string;
}

/** The checks of a selftest report wherever the answer carries them. */
function checksIn(value: unknown): Check[] | null {
  if (!value || typeof value !== 'object') return null;
  const checks = (value as { checks?: unknown }).checks;
  if (Array.isArray(checks)) return checks as Check[];
  for (const inner of Object.values(value)) {
    const found = checksIn(inner);
    if (found) return found;
  }
  return null;
}

describe('the selftest on a card gone read-only', () => {
  let card: ReturnType<typeof mountExt4>;
  let broker: TestBroker;
  let svc: Service | null = null;
  let client: mqtt.MqttClient | null = null;
  const deviceId = `storage-selftest-${randomBytes(3).toString('hex')}`;
  const prefix = `vgtest-${randomBytes(3).toString('hex')}`;
  const results: string[] = [];

  beforeAll(async () => {
    card = mountExt4(64);
    broker = await testBroker();
    client = mqtt.connect(broker.url, { clientId: `${deviceId}-operator` });
    client.on('message', (_topic, payload) => results.push(payload.toString()));
    await new Promise<void>((resolve, reject) => {
      client!.once('connect', () =>
        client!.subscribe(`${prefix}/${deviceId}/cmd/selftest/result`, { qos: 1 }, (err) => (err ? reject(err) : resolve())),
      );
    });
  });

  afterAll(async () => {
    await svc?.stop();
    await new Promise<void>((resolve) => (client ? client.end(true, {}, () => resolve()) : resolve()));
    await broker?.close();
    card?.release();
  });

  it('names the storage fault with the file and what to do, and the database line blames the card, not permissions', async () => {
    const dbPath = join(card.dir, 'vendgate.db');
    svc = await startService({ config: storageSettings({ deviceId, dbPath, ballastMb: 1, mqttUrl: broker.url, prefix }) });
    await svc.waitFor(() => svc!.logs().some((l) => /mqtt connected/i.test(String(l.msg))), { timeoutMs: 15_000, what: 'MQTT connected' });

    card.failFileSystem();
    // The next write the service tries finds the fault: the order is refused because of the card.
    const refused = await post(`${svc.localUrl}/api/orders`, { slot: 'A1' });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('VG_ERR_STORAGE');

    // Asked again every 3 s until answered (the same request id: a repeat gets the first answer), in
    // case the service's command subscription was not yet in place.
    let askedAt = 0;
    const checks = await waitFor(
      () => {
        const found = results.map((r) => checksIn(JSON.parse(r) as unknown)).find((c) => c !== null);
        if (!found && Date.now() - askedAt > 3_000) {
          askedAt = Date.now();
          client!.publish(`${prefix}/${deviceId}/cmd/selftest`, JSON.stringify({ requestId: 'st-card' }), { qos: 1 });
        }
        return found;
      },
      { what: 'the selftest result' },
    );
    const byName = new Map(checks.map((c) => [c.name, c]));

    const storage = byName.get('storage');
    expect(storage).toMatchObject({ status: 'FAIL' });
    // The report on the shared topic names no path (every reader of it sees it): the file is `<path>`
    // there; `vendgate selftest` on the device shows the full path.
    expect(storage!.detail).toContain('<path>');
    expect(storage!.detail).not.toContain(dbPath);
    expect(storage!.detail).toMatch(/read-only/);
    expect(storage!.hint).toMatch(/replace the SD card/);

    const database = byName.get('database');
    expect(database).toMatchObject({ status: 'FAIL' });
    expect(database!.hint).toMatch(/has turned read-only: the card is failing/);
    expect(database!.hint).not.toMatch(/chown/);
  });
});
