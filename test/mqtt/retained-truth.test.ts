import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from 'mqtt';
import { stringify } from 'yaml';
import { orderOn, startService, type Service } from '../helpers/service.js';
import { testBroker, type TestBroker } from '../helpers/broker.js';
import { runCli } from '../../src/cli/index.js';
import { fakeIo } from '../cli/cli-io.js';
import { waitFor } from '../helpers/wait.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/**
 * What a client that subscribes now is given for `topic`: the retained value, or null when the
 * broker holds none (an empty retained message clears it). A fresh subscriber each time: exactly what
 * Home Assistant or a dashboard sees after a restart.
 */
async function retainedNow(url: string, topic: string): Promise<string | null> {
  const client = connect(url, { protocolVersion: 4, clean: true, reconnectPeriod: 0 });
  try {
    return await new Promise<string | null>((resolve, reject) => {
      client.on('message', (received, payload, packet) => {
        if (received === topic && packet.retain) resolve(payload.length ? payload.toString() : null);
      });
      client.on('error', reject);
      client.on('connect', () =>
        client.subscribe(topic, { qos: 1 }, () => {
          // Retained messages are sent right after the SUBACK; a round trip of our own marks their end.
          const marker = `${topic}/-marker-${Math.random()}`;
          client.subscribe(marker, { qos: 1 }, () => client.publish(marker, 'x', { qos: 1 }));
          client.on('message', (received) => {
            if (received === marker) resolve(null);
          });
        }),
      );
    });
  } finally {
    client.end(true);
  }
}

async function apiState(svc: Service): Promise<{ phase: string; catalogVersion: string; order: { orderId: number } | null }> {
  return (await (await fetch(`${svc.localUrl}/api/state`)).json()) as never;
}

async function openAlarmsGauge(svc: Service): Promise<number> {
  const text = await (await fetch(`${svc.localUrl}/metrics`)).text();
  return Number(/^vendgate_open_alarms (\d+)$/m.exec(text)![1]);
}

async function cli(svc: Service, args: string[]): Promise<void> {
  const { io, stderr } = fakeIo({ env: {} });
  const code = await runCli([...args, '--config', svc.configPath], io);
  expect(code, stderr()).toBe(0);
}

describe('every retained topic says what the API says, after each transition', () => {
  let broker: TestBroker;
  let svc: Service;
  let base: string;

  async function phaseAgrees(expected: string): Promise<void> {
    await waitFor(async () => (await apiState(svc)).phase === expected, { what: `the screen to show ${expected}` });
    await waitFor(async () => JSON.parse((await retainedNow(broker.url, `${base}/state`)) ?? '{}').phase === expected, {
      what: `retained state ${expected} (the screen shows ${expected})`,
    });
  }

  it('state follows the screen back to idle after a sale; status, catalog and alarms follow too', async () => {
    broker = await testBroker();
    cleanups.push(() => broker.close());
    const deviceId = `rt-${Math.random().toString(16).slice(2, 10)}`;
    base = `vendgate/${deviceId}`;
    svc = await startService({
      config: {
        device: { id: deviceId },
        mqtt: { url: broker.url, telemetryIntervalSec: 3600 },
        kiosk: { resultScreenSec: 1 },
        slots: { lowStockAt: 2 },
      },
    });
    cleanups.push(() => svc.stop());

    // Start: online, idle, the applied catalog.
    await waitFor(async () => (await retainedNow(broker.url, `${base}/status`)) === 'online', { what: 'online' });
    await phaseAgrees('idle');
    const version = (await apiState(svc)).catalogVersion;
    await waitFor(async () => JSON.parse((await retainedNow(broker.url, `${base}/catalog`)) ?? '{}').version === version, {
      what: 'retained catalog = API catalogVersion',
    });

    // A sale: waiting for payment, vended, and — with nothing else happening — idle again.
    const created = await orderOn(svc.localUrl);
    await phaseAgrees('awaiting_payment');
    expect((await fetch(created.payUrl, { method: 'POST' })).status).toBe(204);
    await waitFor(() => svc.readSimLog().length === 1, { what: 'the vend' });
    await phaseAgrees('idle');

    // A slot counted low opens its retained alarm; a refill clears it.
    await cli(svc, ['refill', 'A1', '1']);
    await waitFor(async () => (await openAlarmsGauge(svc)) === 1, { what: 'the alarm open in /metrics' });
    await waitFor(async () => (await retainedNow(broker.url, `${base}/alarms/stock_low/A1`)) !== null, { what: 'retained alarm' });
    await cli(svc, ['refill', 'A1', '20']);
    await waitFor(async () => (await openAlarmsGauge(svc)) === 0, { what: 'the alarm closed in /metrics' });
    await waitFor(async () => (await retainedNow(broker.url, `${base}/alarms/stock_low/A1`)) === null, { what: 'retained alarm cleared' });

    // A new catalog version from the CLI: the retained catalog names it.
    const document = join(svc.dir, 'catalog.yaml');
    writeFileSync(document, stringify({ version: 'retained-test-2', items: [{ slot: 'A1', name: 'Water', price: 1700 }] }));
    await cli(svc, ['catalog', '--apply', document]);
    await waitFor(async () => (await apiState(svc)).catalogVersion !== version, { what: 'the new version on the API' });
    const applied = (await apiState(svc)).catalogVersion;
    await waitFor(async () => JSON.parse((await retainedNow(broker.url, `${base}/catalog`)) ?? '{}').version === applied, {
      what: 'retained catalog = the new version',
    });

    // A clean stop: offline on both retained topics.
    await svc.kill('SIGTERM');
    expect(await retainedNow(broker.url, `${base}/status`)).toBe('offline');
    expect(JSON.parse((await retainedNow(broker.url, `${base}/state`)) ?? '{}').phase).toBe('offline');
  });
});
