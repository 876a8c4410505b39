import { afterEach, describe, expect, it } from 'vitest';
import { connect as tcpConnect, type Socket } from 'node:net';
import { pino } from 'pino';
import { createRelay, type Relay } from '../../src/fleet-relay/index.js';
import { parseRelaySettings } from '../../src/settings/fleet-relay/index.js';
import { signedGeregeEvent } from '../helpers/gerege-event.js';
import { relayFleet, routeAnnouncement } from './harness.js';
import { uniqueId } from '../helpers/broker.js';
import type { Watcher } from '../mqtt/watch.js';
import { waitFor } from '../helpers/wait.js';

/**
 * One device on the broker must not stall the relay: its route topic is the only one its account
 * may write, but every relay replica reads it at every connect. A flood of announcements, one of
 * them a retained 0.67 MB route of ~45,000 prefixes (quadratic de-duplication made that 7 s of a
 * blocked event loop), must cost the relay nothing visible: webhooks keep being answered, the
 * oversized routes are dropped and counted, the honest device keeps its route.
 */
const SECRET = 'whsec_flood_test';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function startRelay(url: string, prefix: string, extra: Record<string, unknown> = {}): Promise<{ relay: Relay; url: string }> {
  const settings = parseRelaySettings({
    relay: { id: uniqueId('r'), port: 0, host: '127.0.0.1', providers: ['gerege'], webhookSecrets: { gerege: [SECRET] }, ...extra },
    mqtt: { url, prefix, reconnectMinMs: 100 },
    log: { level: 'silent' },
  });
  const relay = createRelay(settings, { logger: pino({ level: 'silent' }), lookup: null });
  const listening = await relay.start();
  cleanups.push(() => relay.stop());
  return { relay, url: listening.url };
}

/** ~0.67 MB: 45,000 distinct well-formed prefixes of the device's own id. */
function hugeRoute(deviceId: string): string {
  const prefixes = Array.from({ length: 45_000 }, (_, i) => `${deviceId}-${i.toString(36).padStart(4, '0')}-`);
  return routeAnnouncement(deviceId, prefixes);
}

async function postWebhook(url: string, n: number): Promise<{ status: number; ms: number }> {
  const { body, headers } = signedGeregeEvent(SECRET, `evt_${n}`, {
    id: `pi_${n}`,
    object: 'payment_intent',
    status: 'succeeded',
    reference: `vm-ok-aaaa-${n}-0badf00d`,
  });
  const started = performance.now();
  const response = await fetch(`${url}/webhooks/gerege`, { method: 'POST', headers, body });
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function fleet(): Promise<{ url: string; prefix: string; w: Watcher }> {
  const { broker, prefix, w } = await relayFleet(cleanups, 'flood');
  await w.publish(`${prefix}/vm-ok/route`, routeAnnouncement('vm-ok', ['vm-ok-aaaa-']), { retain: true });
  return { url: broker.url, prefix, w };
}

describe('relay: a device flooding route announcements', () => {
  it('keeps serving webhooks, drops the oversized routes with a counter, and keeps the honest route', async () => {
    const { url, prefix, w } = await fleet();
    const { relay, url: relayUrl } = await startRelay(url, prefix);
    await waitFor(() => relay.ready() && relay.stats().devices === 1, { what: 'the honest route' });

    const latencies: number[] = [];
    const statuses: number[] = [];
    let sending = true;
    cleanups.push(() => {
      sending = false;
    });
    const sender = (async () => {
      for (let n = 1; sending || n <= 20; n += 1) {
        const answer = await postWebhook(relayUrl, n).catch(() => ({ status: 0, ms: 0 }));
        statuses.push(answer.status);
        latencies.push(answer.ms);
      }
    })();

    const topic = `${prefix}/vm-bad/route`;
    const tooMany = routeAnnouncement(
      'vm-bad',
      Array.from({ length: 17 }, (_, i) => `vm-bad-db${i}-`),
    );
    const huge = hugeRoute('vm-bad');
    expect(Buffer.byteLength(huge)).toBeGreaterThan(650_000);
    // Each round ends with the oversized route, so the device's last word is one the relay drops.
    for (let round = 0; round < 20; round += 1) {
      await w.publish(topic, routeAnnouncement('vm-bad', ['vm-bad-bbbb-']));
      await w.publish(topic, tooMany);
      await w.publish(topic, huge, { retain: round === 19 });
    }
    await waitFor(() => relay.stats().routesDropped >= 40, { timeoutMs: 60_000, what: 'every oversized announcement to be dropped' });
    // The last word of vm-bad was the retained 0.67 MB route: it has no route now.
    await waitFor(() => relay.stats().devices === 1, { what: 'vm-bad to be forgotten' });
    sending = false;
    await sender;
    expect(statuses.filter((status) => status !== 200)).toEqual([]);

    expect(relay.stats().published).toBeGreaterThanOrEqual(20);
    expect(relay.stats().refused).toBe(0);
    console.log(
      `relay under a route flood: ${latencies.length} webhooks, p50 ${percentile(latencies, 50).toFixed(1)} ms, ` +
        `p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`,
    );

    // Every reconnect reads the retained 0.67 MB route again: a fresh replica drops it and serves.
    const fresh = await startRelay(url, prefix);
    await waitFor(() => fresh.relay.ready(), { what: 'the fresh replica to read the backlog' });
    expect(fresh.relay.stats().routesDropped).toBe(1);
    expect(fresh.relay.stats().devices).toBe(1);
    expect((await postWebhook(fresh.url, 9_999)).status).toBe(200);
  });
});

describe("relay listener: the device webhook listener's limits", () => {
  function open(url: string): Socket {
    const { hostname, port } = new URL(url);
    const socket = tcpConnect({ host: hostname, port: Number(port) });
    socket.on('error', () => {});
    // Read whatever the server says (a 408), so its close is seen.
    socket.resume();
    cleanups.push(() => void socket.destroy());
    return socket;
  }
  const closed = (socket: Socket) => socket.destroyed || socket.readyState === 'closed';

  it('cuts a client that drips its headers, and caps open connections (the most suspicious goes first)', async () => {
    const { url, prefix } = await fleet();
    const { url: relayUrl } = await startRelay(url, prefix, { headersTimeoutMs: 500, requestTimeoutMs: 1_000, maxConnections: 3 });

    const slow = open(relayUrl);
    slow.on('connect', () => slow.write('POST /webhooks/gerege HTTP/1.1\r\nHost: relay\r\n'));
    let slowClosed = false;
    slow.on('close', () => (slowClosed = true));
    await waitFor(() => slowClosed, { what: 'the header timeout to cut the slow client' });

    const idle = [open(relayUrl), open(relayUrl), open(relayUrl)];
    await waitFor(() => idle.every((s) => s.readyState === 'open'), { timeoutMs: 10_000, what: 'three connections' });
    const fourth = open(relayUrl);
    await waitFor(() => fourth.readyState === 'open', { timeoutMs: 10_000, what: 'the fourth connection' });
    // At the cap, the oldest connection that never sent a request is pushed out.
    await waitFor(() => closed(idle[0]!), { timeoutMs: 10_000, what: 'the oldest idle connection to be pushed out' });
    expect((await postWebhook(relayUrl, 1)).status).toBe(200);
  });
});
