import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startProviderStack, type OrderAnswer, type ProviderStack } from '../techniques/chaos/stack.js';
import { relayProcess, type RelayProcess } from '../techniques/e2e/fleet/relay-process.js';
import { testBroker, uniqueId, type TestBroker } from '../helpers/broker.js';
import { waitFor } from '../helpers/wait.js';
import { watch, clearRetainedUnder, type Watcher } from '../mqtt/watch.js';

/**
 * QPay in fleet mode, black-box: the real service (`dist/main.js start`, webhooks from the broker),
 * a real relay process (`dist/main.js relay`), a real MQTT broker over TCP, and the QPay simulator
 * calling each invoice's callback_url — the relay's `/webhooks/qpay?ref=<reference>`. QPay signs
 * nothing, so the callback is a hint: it reaches the device through the relay, routed by the
 * reference in its URL, and makes the device read payment/check. Nothing is decided from it.
 * The poller is set to its slowest (60 s), so a vend within seconds of the payment came from the hint.
 */

interface Setup {
  broker: TestBroker;
  relay: RelayProcess;
  stack: ProviderStack;
  watcher: Watcher;
  prefix: string;
  deviceId: string;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function setup(): Promise<Setup> {
  const broker = await testBroker();
  cleanups.push(() => broker.close());
  const prefix = uniqueId('qpayfleet');
  const deviceId = uniqueId('qp');
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-qpay-relay-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(async () => {
    if (!broker.embedded) await clearRetainedUnder(broker.url, `${prefix}/#`);
  });
  const watcher = await watch(broker.url, [`${prefix}/+/webhooks/#`]);
  cleanups.push(() => watcher.close());
  const relay = await relayProcess({
    dir,
    name: 'relay-qpay',
    // Unsigned callbacks: no webhook secret for qpay.
    config: {
      relay: { providers: ['qpay'], publishTimeoutMs: 2_000 },
      mqtt: { url: broker.url, prefix, reconnectMinMs: 200 },
      log: { level: 'debug' },
    },
    env: {},
  });
  cleanups.push(() => relay.kill('SIGTERM'));
  await relay.start();
  const stack = await startProviderStack({
    provider: 'qpay',
    config: {
      device: { id: deviceId },
      provider: { callbackUrl: `http://127.0.0.1:${relay.port}/webhooks/qpay` },
      poll: { intervalMs: 60_000, maxBackoffMs: 60_000 },
      mqtt: { url: broker.url, prefix, reconnectMinMs: 200, reconnectMaxMs: 2_000, telemetryIntervalSec: 3_600 },
      fleet: { webhookSource: 'broker' },
    },
  });
  cleanups.push(() => stack.stop());
  await waitFor(() => relay.logs().some((l) => l.msg === 'device route announced' && l.deviceId === deviceId), {
    timeoutMs: 30_000,
    what: 'the relay to learn the device route',
  });
  return { broker, relay, stack, watcher, prefix, deviceId };
}

async function order(s: ProviderStack): Promise<OrderAnswer> {
  const answer = await s.call('POST', '/api/orders', { slot: 'A1' });
  if (answer.status !== 201) throw new Error(`order refused: ${answer.status} ${JSON.stringify(answer.json)}`);
  return answer.json;
}

function relayCallback(relay: RelayProcess, query: string, init: RequestInit = { method: 'POST' }) {
  return fetch(`http://127.0.0.1:${relay.port}/webhooks/qpay?${query}`, init);
}

/** Reads of this invoice QPay has answered (payment/check or the invoice). */
function readsOf(s: ProviderStack, invoiceId: string): number {
  return s.sim.records().getCalls.filter((c) => c.id === invoiceId).length;
}

describe('qpay callbacks through the fleet relay', () => {
  it('the payment callback reaches the device by its reference and causes the read that vends, once', { timeout: 120_000 }, async () => {
    const { relay, stack: s, watcher, prefix, deviceId } = await setup();
    const placed = await order(s);
    // Let the poller's first read of the new order pass: from here on it waits 60 s.
    await waitFor(() => readsOf(s, placed.invoiceId!) > 0, { timeoutMs: 10_000, what: 'the first poll of the new order' });
    const paidAt = Date.now();
    await s.sim.pay(placed.invoiceId!);

    const done = await s.waitSettled(placed.orderId, 30_000);
    expect(done.state).toBe('vended');
    expect(Date.now() - paidAt).toBeLessThan(30_000);
    expect(s.actuationsByOrder().get(placed.orderId)).toBe(1);
    // It came the fleet way: the relay published the callback on this device's topic, with the query it read.
    const message = await watcher.next(`${prefix}/${deviceId}/webhooks/qpay`);
    const [headerLine] = message.payload.split('\n');
    expect(JSON.parse(headerLine!)).toMatchObject({ 'x-vendgate-callback-query': `ref=${placed.reference}` });
    expect(s.query("SELECT event_id FROM webhook_events WHERE event_id LIKE 'qpay-hint:%'").length).toBeGreaterThan(0);

    // Replays of the callback (and QPay's own repeats) cause reads at most: still one actuation.
    for (let i = 0; i < 5; i += 1) expect((await relayCallback(relay, `ref=${placed.reference}`)).status).toBe(200);
    await s.sim.waitForDeliveriesIdle();
    await waitFor(() => s.query('SELECT 1 FROM webhook_events WHERE processed_at IS NULL').length === 0, {
      timeoutMs: 15_000,
      what: 'the replayed hints to be worked',
    });
    expect(s.actuationsByOrder().get(placed.orderId)).toBe(1);
    expect((await s.order(placed.orderId))?.state).toBe('vended');
  });

  it('forged callbacks through the relay cause reads, never a decision; made-up references go nowhere', { timeout: 120_000 }, async () => {
    const { relay, stack: s, watcher, prefix, deviceId } = await setup();
    const placed = await order(s);
    await waitFor(() => readsOf(s, placed.invoiceId!) > 0, { timeoutMs: 10_000, what: 'the first poll of the new order' });
    const before = readsOf(s, placed.invoiceId!);

    // A forger who learned the callback URL, claiming payment in every way a body could.
    for (let i = 0; i < 10; i += 1) {
      const answer = await relayCallback(
        relay,
        `ref=${placed.reference}`,
        i % 2 === 0
          ? { method: 'GET' }
          : { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"payment_status":"PAID","paid_amount":1500}' },
      );
      expect(answer.status).toBe(200);
    }
    await waitFor(() => readsOf(s, placed.invoiceId!) > before, { timeoutMs: 15_000, what: 'a read caused by a forged callback' });
    await waitFor(() => s.query('SELECT 1 FROM webhook_events WHERE processed_at IS NULL').length === 0, {
      timeoutMs: 15_000,
      what: 'the forged hints to be worked',
    });
    expect((await s.order(placed.orderId))?.state).toBe('awaiting_payment');
    expect(s.svc.readSimLog()).toHaveLength(0);
    // A flood is bounded at the device: one stored hint per order per 5 s window.
    expect(s.query("SELECT 1 FROM webhook_events WHERE event_id LIKE 'qpay-hint:%'").length).toBeLessThanOrEqual(4);

    // A reference of this device but of no order it made: forwarded (the relay cannot know), refused by the device, stored nowhere.
    const stranger = `${placed.reference.replace(/-\d+-[0-9a-f]{8}$/, '')}-999-0badf00d`;
    expect((await relayCallback(relay, `ref=${stranger}`)).status).toBe(200);
    await watcher.next(`${prefix}/${deviceId}/webhooks/qpay`, (m) => m.payload.includes(stranger));
    // A reference of no announced device, none at all, or two: nothing published.
    const published = watcher.messages.length;
    expect((await relayCallback(relay, 'ref=nobody-db1-1-0badf00d')).status).toBe(202);
    expect((await relayCallback(relay, 'x=1')).status).toBe(400);
    expect((await relayCallback(relay, `ref=${placed.reference}&ref=${placed.reference}`)).status).toBe(400);
    expect(watcher.messages.length).toBe(published);
    await waitFor(() => s.svc.logs().some((l) => l.msg === 'broker webhook refused: verification failed'), {
      timeoutMs: 15_000,
      what: 'the device to refuse the stranger',
    });
    expect(s.query('SELECT event_id FROM webhook_events WHERE event_id LIKE ?', `%${stranger}%`)).toEqual([]);

    // The real payment still sells, once.
    await s.sim.pay(placed.invoiceId!);
    expect((await s.waitSettled(placed.orderId, 30_000)).state).toBe('vended');
    expect(s.actuationsByOrder().get(placed.orderId)).toBe(1);
  });
});
