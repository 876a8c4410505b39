import { describe, expect, it } from 'vitest';
import { connect } from 'mqtt';
import { startService, freePort } from '../helpers/service.js';
import { testBroker } from '../helpers/broker.js';
import { openDatabase } from '../../src/store/index.js';
import { lastSelftestResult } from '../../src/selftest/index.js';
import { byName, failing, fakeExec, onCleanup, selftestFor, uniqueDeviceId } from './harness.js';
import { REPORT_LINES } from './report-lines.js';

/** Waits for the retained message on `topic` (a fresh subscriber gets it at once). */
async function retained(url: string, topic: string): Promise<string> {
  const client = connect(url, { protocolVersion: 4, clean: true, reconnectPeriod: 0 });
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no retained message on ${topic}`)), 30_000);
      client.on('message', (received, payload, packet) => {
        if (received === topic && packet.retain) {
          clearTimeout(timer);
          resolve(payload.toString());
        }
      });
      client.on('connect', () => client.subscribe(topic, { qos: 1 }));
      client.on('error', reject);
    });
  } finally {
    client.end(true);
  }
}

/** A shared broker (MQTT_TEST_URL) keeps retained messages: leave none behind. */
async function clearRetained(url: string, topic: string): Promise<void> {
  const client = connect(url, { protocolVersion: 4, clean: true, reconnectPeriod: 0 });
  await new Promise<void>((resolve) => {
    client.on('connect', () => client.publish(topic, '', { qos: 1, retain: true }, () => resolve()));
    client.on('error', () => resolve());
  });
  client.end(true);
}

describe('selftest against a running demo service', () => {
  it('a healthy demo device passes every check, within seconds, and the result is stored and published retained', async () => {
    const broker = await testBroker();
    onCleanup(() => broker.close());
    const deviceId = uniqueDeviceId();
    const webhookPort = await freePort();
    const svc = await startService({
      webhookPort,
      config: {
        device: { id: deviceId },
        mqtt: { url: broker.url },
        // The webhook listener's own address stands in for the tunnel: the round trip is the same.
        http: { webhook: { publicUrl: `http://127.0.0.1:${webhookPort}` } },
      },
    });
    onCleanup(() => svc.stop());

    const started = Date.now();
    const { report } = await selftestFor(svc.configPath, { publish: true });
    const elapsed = Date.now() - started;

    const checks = byName(report.checks);
    expect(
      report.checks.filter((c) => c.status !== 'PASS'),
      JSON.stringify(report.checks, null, 2),
    ).toEqual([]);
    expect(report.ok).toBe(true);
    expect(Object.keys(checks)).toEqual(expect.arrayContaining([...REPORT_LINES, 'actuator']));
    expect(checks['webhook.tunnel']!.detail).toMatch(/came back .* into this device's inbox in \d+ ms/);
    expect(checks.mqtt!.detail).toMatch(/received our own message/);
    expect(elapsed).toBeLessThan(10_000);

    // Stored through a second connection while the service keeps running …
    const db = openDatabase(svc.dbPath, { readonly: true });
    try {
      expect(lastSelftestResult(db)?.startedAt).toBe(report.startedAt);
    } finally {
      db.close();
    }
    // … and published retained where operators look for it.
    const topic = `vendgate/${deviceId}/selftest`;
    onCleanup(() => clearRetained(broker.url, topic));
    const message = JSON.parse(await retained(broker.url, topic)) as { report: { startedAt: string; ok: boolean } };
    expect(message.report.startedAt).toBe(report.startedAt);
    expect(message.report.ok).toBe(true);

    // The service did not notice: it still answers and still takes orders.
    const health = await fetch(`${svc.localUrl}/healthz`);
    expect(health.status).toBe(200);
  });

  it('selftests beside the running service leave it undisturbed: it keeps its ports and keeps taking orders', async () => {
    const svc = await startService();
    onCleanup(() => svc.stop());
    const exec = fakeExec();

    const first = await selftestFor(svc.configPath, {}, { exec });
    const second = await selftestFor(svc.configPath, {}, { exec });

    expect(failing(first.report.checks)).toEqual([]);
    expect(failing(second.report.checks)).toEqual([]);
    for (const name of ['webhook.listener', 'local.listener', 'database', 'provider'])
      expect(byName(second.report.checks)[name]!.status).toBe('PASS');
    const order = await fetch(`${svc.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: 'A1' }),
    });
    expect(order.status).toBe(201);
    expect(svc.logs().filter((line) => ['error', 'fatal'].includes(line.level))).toEqual([]);
  });

  it('with the service stopped, the listeners and the embedded broker WARN "service not running" and nothing FAILs', async () => {
    const svc = await startService({ config: { mqtt: { url: 'embedded', embeddedPort: await freePort() } } });
    await svc.kill('SIGTERM');
    onCleanup(() => svc.stop());

    const { report } = await selftestFor(svc.configPath);
    const checks = byName(report.checks);

    expect(failing(report.checks)).toEqual([]);
    expect(report.ok).toBe(true);
    for (const name of ['webhook.listener', 'local.listener']) {
      expect(checks[name]).toMatchObject({ status: 'WARN', detail: 'service not running' });
      expect(checks[name]!.hint).toMatch(/systemctl start vendgate/);
    }
    expect(checks.mqtt).toMatchObject({ status: 'WARN' });
    expect(checks.mqtt!.detail).toMatch(/embedded broker not running/);
    expect(checks.database!.status).toBe('PASS');
  });

  it('with --expect-service a stopped service is a FAIL (the install and update scripts rely on it)', async () => {
    const svc = await startService();
    await svc.kill('SIGTERM');
    onCleanup(() => svc.stop());

    const { report } = await selftestFor(svc.configPath, { expectService: true });

    expect(failing(report.checks)).toEqual(['webhook.listener', 'local.listener']);
    expect(report.ok).toBe(false);
  });
});
