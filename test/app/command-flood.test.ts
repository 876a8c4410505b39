import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { watch, type Watcher } from '../mqtt/watch.js';
import { signedPayload } from '../helpers/operator.js';

/**
 * Anyone who may publish on the device's `cmd/…` topics, on the real service and a real broker
 * (Mosquitto at 127.0.0.1:1883, or MQTT_TEST_URL): 2,000 messages no key vouches for (unreadable,
 * unsigned, forged, unknown, and 300 unsigned selftests) must not wear out the SD card, must not
 * multiply selftests (each calls the provider), and must not stop the kiosk's API from answering.
 * The selftest reports that go out on the shared topics carry no paths, ports or URLs.
 */
const BROKER = process.env.MQTT_TEST_URL ?? 'mqtt://127.0.0.1:1883';
const MIB = 1024 * 1024;
/** Commands sent and not yet answered, at most: well under a broker's queue per client (Mosquitto's default is 1,000). */
const UNANSWERED = 200;

let svc: Service | null = null;
let watcher: Watcher | null = null;
let stopAsking = () => {};
afterEach(async () => {
  stopAsking();
  await svc?.stop();
  svc = null;
  await watcher?.clearRetained();
  await watcher?.close();
  watcher = null;
});

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

describe('a flood of unverified commands', () => {
  it('2,000 messages write under 1 MiB, run one selftest at a time, publish no paths or URLs, and the local API keeps answering', async () => {
    const deviceId = `flood-${randomBytes(4).toString('hex')}`;
    const prefix = `vgflood${randomBytes(3).toString('hex')}`;
    const base = `${prefix}/${deviceId}`;
    // What the test reads, not the echo of its own 2,000 commands: a broker queues a bounded number
    // of messages for a subscriber (Mosquitto: 1,000) and drops what comes beyond.
    watcher = await watch(BROKER, [`${base}/status`, `${base}/selftest`, `${base}/events`, `${base}/cmd/+/result`]);
    const service = await startService({ config: { device: { id: deviceId }, mqtt: { url: BROKER, prefix } } });
    svc = service;
    await watcher.next(`${base}/status`, (m) => m.payload === 'online', 30_000);
    const dbFiles = () => sizeOf(service.dbPath) + sizeOf(`${service.dbPath}-wal`);
    const before = dbFiles();
    let largest = before;

    // The kiosk's API, asked all along.
    const latencies: number[] = [];
    const statuses: number[] = [];
    let asking = true;
    stopAsking = () => (asking = false);
    const asker = (async () => {
      while (asking) {
        const started = performance.now();
        const response = await fetch(`${service.localUrl}/api/state`).catch(() => null);
        await response?.arrayBuffer();
        statuses.push(response?.status ?? 0);
        latencies.push(performance.now() - started);
        largest = Math.max(largest, dbFiles());
      }
    })();

    const messages: [name: string, payload: string][] = [];
    for (let i = 0; i < 2_000; i += 1) {
      const kind = i % 20;
      if (kind < 3) messages.push(['selftest', JSON.stringify({ requestId: `st-${i}` })]);
      else if (kind < 8) messages.push(['refund', JSON.stringify({ requestId: `free-${i}`, orderId: i + 1 })]);
      else if (kind < 12) messages.push(['resolve', `garbage ${i} ${'x'.repeat(i % 200)}`]);
      else if (kind < 16) messages.push([`nope${i}`, JSON.stringify({ requestId: `n-${i}` })]);
      else messages.push(['refund', signedPayload('another-device', 'refund', { orderId: 1 }, { requestId: `forged-${i}` })]);
    }
    const started = Date.now();
    const results = () => watcher!.messages.filter((m) => m.topic.startsWith(`${base}/cmd/`) && m.topic.endsWith('/result'));
    // At most UNANSWERED commands waiting at a time. The broker holds a bounded queue for the device
    // too (Mosquitto: 1,000 messages) and drops the rest: a flood sent faster than a loaded machine
    // answers lost commands at the broker, and the test then waited for answers that could not come.
    // The device still takes 2,000 messages in bursts of up to UNANSWERED.
    let sent = 0;
    for (const [name, payload] of messages) {
      if (sent - results().length >= UNANSWERED) {
        await watcher.until(() => sent - results().length < UNANSWERED, {
          timeoutMs: 120_000,
          what: `the device to answer all but ${UNANSWERED} commands`,
        });
      }
      await watcher.publish(`${base}/cmd/${name}`, payload);
      sent += 1;
    }
    await watcher.until(() => results().length >= messages.length, { timeoutMs: 240_000, what: 'an answer to every message' });
    const elapsedMs = Date.now() - started;
    asking = false;
    await asker;
    largest = Math.max(largest, dbFiles());

    const growth = largest - before;
    console.log(
      `command flood: ${messages.length} messages answered in ${elapsedMs} ms; database + WAL grew ${(growth / 1024).toFixed(1)} KiB; ` +
        `local API ${latencies.length} requests, p95 ${percentile(latencies, 95).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`,
    );
    expect(growth).toBeLessThan(MIB);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);

    // 300 selftest requests: one run at a time, the others answered from it.
    const selftests = results()
      .filter((m) => m.topic === `${base}/cmd/selftest/result`)
      .map((m) => JSON.parse(m.payload) as { ok: boolean; result?: { report: { startedAt: string } } });
    expect(selftests).toHaveLength(300);
    const runs = new Set(selftests.map((answer) => answer.result?.report.startedAt));
    expect(runs.size).toBeLessThanOrEqual(Math.ceil(elapsedMs / 10_000) + 1);
    // What every reader of the topic sees: no file paths, ports or URLs of the device.
    const shared = [...selftests.map((m) => JSON.stringify(m)), ...watcher.on(`${base}/selftest`).map((m) => m.payload)].join('\n');
    expect(shared).not.toContain(service.dir);
    expect(shared).not.toContain(`:${new URL(service.localUrl).port}`);
    expect(shared).not.toMatch(/https?:\/\//);

    // Counted, and summarised in one event (at the latest when the service stops).
    await service.stop();
    const summaries = watcher.on(`${base}/events`).map((m) => JSON.parse(m.payload) as { type: string; total?: number });
    const counted = summaries.filter((e) => e.type === 'command.unverified_summary').reduce((n, e) => n + (e.total ?? 0), 0);
    expect(counted).toBe(messages.length);
    expect(summaries.filter((e) => e.type === 'command.handled')).toEqual([]);
  }, 300_000);
});
