import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterAll, beforeAll, expect } from 'vitest';
import { postJson as post, startService, type Service } from '../helpers/service.js';
import { testBroker, type TestBroker } from '../helpers/broker.js';
import type { Defer } from '../helpers/cleanup.js';
import type { Mounted } from '../helpers/mounts.js';
import { tempDir } from '../helpers/temp.js';

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

/**
 * For a describe about one fault of the disk under the database: a device id (`<idPrefix>-…`) and an
 * MQTT prefix of its own, its alarms watched on a test broker (alarmsOnTestBroker), the disk `mount`
 * makes before the tests and releases after them, and `start` for a service with its database on that
 * disk and its alarms on that broker, stopped after the tests (before the disk is released).
 */
export function serviceOnFaultyDisk<D extends Mounted>(idPrefix: string, mount: () => D) {
  const deviceId = `${idPrefix}-${randomBytes(3).toString('hex')}`;
  const prefix = `vgtest-${randomBytes(3).toString('hex')}`;
  const { retained, broker } = alarmsOnTestBroker(prefix, deviceId, `${deviceId}-watch`);
  let disk: D | undefined;
  const started: Service[] = [];
  beforeAll(() => {
    disk = mount();
  });
  afterAll(async () => {
    for (const svc of started) await svc.stop();
    disk?.release();
  });
  return {
    deviceId,
    /** The disk, mounted in beforeAll. */
    disk: (): D => {
      if (!disk) throw new Error('serviceOnFaultyDisk: the disk is mounted in beforeAll');
      return disk;
    },
    /** The retained alarm `name` of this device on the broker, once it is there. */
    alarm: (name: string): string | undefined => retained.get(`${prefix}/${deviceId}/alarms/${name}`),
    /** The service on `vendgate.db` on the disk; `vendMs` is how long the machine turns. */
    async start(options: { ballastMb: number; vendMs: number }): Promise<{ svc: Service; dbPath: string }> {
      const dbPath = join(disk!.dir, 'vendgate.db');
      const svc = await startService({
        config: {
          ...storageSettings({ deviceId, dbPath, ballastMb: options.ballastMb, mqttUrl: broker().url, prefix }),
          actuator: { sim: { durationMs: options.vendMs } },
        },
      });
      started.push(svc);
      return { svc, dbPath };
    },
  };
}

/** The settings of a device whose database is `dbPath` (with a ballast of `ballastMb`) and whose alarms go to `mqttUrl` under `prefix`. */
export function storageSettings(o: { deviceId: string; dbPath: string; ballastMb: number; mqttUrl: string; prefix: string }) {
  return {
    device: { id: o.deviceId },
    storage: { path: o.dbPath, ballastMb: o.ballastMb },
    mqtt: { url: o.mqttUrl, prefix: o.prefix, telemetryIntervalSec: 3600 },
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

function libfaketime(): string {
  for (const dir of readdirSync('/usr/lib')) {
    const path = join('/usr/lib', dir, 'faketime', 'libfaketimeMT.so.1');
    if (existsSync(path)) return path;
  }
  throw new Error('libfaketime not found: apt-get install faketime (scripts/install-test-deps.sh)');
}

/**
 * A wall clock for a Pi without a real-time clock: `env` runs a child under libfaketime (Debian
 * `faketime`) at `offset` (`+3h`, `-30d`), `set` moves it at run time through FAKETIME_TIMESTAMP_FILE
 * (FAKETIME_NO_CACHE=1); the monotonic clock is left alone (FAKETIME_DONT_FAKE_MONOTONIC=1). The
 * file's directory is removed by `defer`'s cleanup.
 */
export function fakeClock(defer: Defer, offset: string): { env: Record<string, string>; set(offset: string): void } {
  const dir = defer(tempDir('vendgate-faketime-'), (d) => d.cleanup());
  const file = join(dir.path, 'offset');
  writeFileSync(file, `${offset}\n`);
  return {
    env: { LD_PRELOAD: libfaketime(), FAKETIME_TIMESTAMP_FILE: file, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' },
    set: (next) => writeFileSync(file, `${next}\n`),
  };
}
