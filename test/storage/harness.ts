import { spawn } from 'node:child_process';
import mqtt from 'mqtt';
import { afterAll, beforeAll, expect } from 'vitest';
import { postJson as post, type Service } from '../helpers/service.js';
import { testBroker, type TestBroker } from '../helpers/broker.js';

/**
 * For a describe: a test broker and a subscriber on `<prefix>/<device>/alarms/#` (`device` may be `+`)
 * that keeps the last message of each topic in `retained`. Opened before the describe's tests,
 * closed after them (after the describe's own afterAll, which stops its services first).
 */
export function alarmsOnTestBroker(
  prefix: string,
  device: string,
  clientId: string,
): { retained: Map<string, string>; broker: () => TestBroker } {
  const retained = new Map<string, string>();
  let broker: TestBroker | undefined;
  let watcher: mqtt.MqttClient | null = null;
  beforeAll(async () => {
    broker = await testBroker();
    const client = (watcher = mqtt.connect(broker.url, { clientId }));
    client.on('message', (topic, payload) => retained.set(topic, payload.toString()));
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => client.subscribe(`${prefix}/${device}/alarms/#`, { qos: 1 }, (err) => (err ? reject(err) : resolve())));
    });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => (watcher ? watcher.end(true, {}, () => resolve()) : resolve()));
    await broker?.close();
  });
  return {
    retained,
    broker: () => {
      if (!broker) throw new Error('alarmsOnTestBroker: the broker starts in beforeAll');
      return broker;
    },
  };
}

export { postJson as post } from '../helpers/service.js';

/** An order for A1, paid in the sandbox, and the vend firing (the machine turning) when this resolves. */
export async function vendFiring(svc: Service): Promise<{ orderId: number; invoiceId: string }> {
  const created = (await (await post(`${svc.localUrl}/api/orders`, { slot: 'A1' })).json()) as { orderId: number; invoiceId: string };
  expect((await post(`${svc.localUrl}/sandbox/pay/${created.invoiceId}`)).status).toBe(204);
  await svc.waitFor(() => svc.logs().some((l) => l.msg === 'vend firing'), { timeoutMs: 20_000, what: 'the vend to fire' });
  return created;
}

/** A new order refused with 503 VG_ERR_STORAGE naming `dbPath` and the free bytes; returns its message. */
export async function orderRefusedForStorage(url: string, dbPath: string): Promise<string> {
  const refused = await post(`${url}/api/orders`, { slot: 'A2' });
  expect(refused.status).toBe(503);
  const body = (await refused.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe('VG_ERR_STORAGE');
  expect(body.error.message).toContain(dbPath);
  expect(body.error.message).toMatch(/\d+ bytes free/);
  return body.error.message;
}

/** /healthz answers 503 with the storage check failed and the provider's fine; returns the checks. */
export async function storageUnhealthy(url: string): Promise<Record<string, { ok: boolean; detail: string }>> {
  const health = await fetch(`${url}/healthz`);
  expect(health.status).toBe(503);
  const checks = ((await health.json()) as { checks: Record<string, { ok: boolean; detail: string }> }).checks;
  expect(checks.storage).toMatchObject({ ok: false });
  expect(checks.provider!.ok).toBe(true);
  return checks;
}

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

/** One start of the compiled service that is expected to fail: its exit code and stderr. */
export function startOnce(configPath: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, 'start', '--config', configPath], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}
