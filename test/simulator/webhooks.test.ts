import { createHmac, timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/util/index.js';
import { signGeregeWebhook, signQutpayWebhook } from '../../src/simulator/index.js';
import { geregeClient, intentBody, invoiceBody, qutpayClient, startReceiver, startSimulator } from './harness.js';
import { waitFor } from '../helpers/wait.js';

const hmacHex = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('hex');
const sameHex = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

describe('webhook signatures', () => {
  it('gerege webhooks carry Gerege-Event-Id and t=<unix>,v1=HMAC-SHA256(secret, "<t>.<raw body>")', async () => {
    const clock = createManualClock();
    const receiver = await startReceiver();
    const sim = await startSimulator({ provider: 'gerege', clock, webhookUrl: receiver.url, webhookSecret: 'whsec_test' });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody(), 'w-1');
    await sim.pay(intent.id);
    await sim.waitForDeliveriesIdle();

    expect(receiver.received).toHaveLength(4);
    for (const { headers, body } of receiver.received) {
      expect(headers['content-type']).toBe('application/json');
      const event = JSON.parse(body);
      expect(Object.keys(event)).toEqual(['id', 'object', 'type', 'livemode', 'created', 'data']);
      expect(headers['gerege-event-id']).toBe(event.id);
      const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(headers['gerege-signature']));
      expect(match).not.toBeNull();
      expect(Number(match![1])).toBe(Math.floor(clock.now() / 1000));
      expect(sameHex(match![2]!, hmacHex('whsec_test', `${match![1]}.${body}`))).toBe(true);
    }
    const last = JSON.parse(receiver.received[3]!.body);
    expect(last).toMatchObject({
      object: 'event',
      type: 'payment_intent.succeeded',
      livemode: false,
      data: { object: { id: intent.id, status: 'succeeded' } },
    });
    // Webhooks carry the same bodies as the Events API.
    expect(receiver.bodies()).toEqual(sim.records().events);
  });

  it('qutpay webhooks carry X-Qutpay-Signature sha256=HMAC-SHA256(secret, raw body) and {event, invoice}', async () => {
    const receiver = await startReceiver();
    const sim = await startSimulator({ provider: 'qutpay', webhookUrl: receiver.url, webhookSecret: 'qp_whsec' });
    const api = qutpayClient(sim);
    const { json: invoice } = await api.post('/api/v1/invoices', invoiceBody(), 'w-2');
    await sim.pay(invoice.id);
    await sim.waitForDeliveriesIdle();
    expect(receiver.bodies().map((b) => `${b.invoice.id}:${b.invoice.status}`)).toEqual([`${invoice.id}:pending`, `${invoice.id}:paid`]);
    for (const { headers, body } of receiver.received) {
      const signature = String(headers['x-qutpay-signature']);
      expect(signature.startsWith('sha256=')).toBe(true);
      expect(sameHex(signature.slice('sha256='.length), hmacHex('qp_whsec', body))).toBe(true);
    }
    expect(receiver.bodies()[1]).toMatchObject({
      event: 'invoice.paid',
      invoice: { id: invoice.id, status: 'paid', amount: 2500, refunds: [] },
    });
    expect(sim.records().deliveries.map((d) => d.eventId)).toEqual([`${invoice.id}:pending`, `${invoice.id}:paid`]);
  });

  it('the exported signing helpers agree with node:crypto', () => {
    const body = '{"a":1}';
    expect(signGeregeWebhook('s', body, 1764400000)).toBe(`t=1764400000,v1=${hmacHex('s', `1764400000.${body}`)}`);
    expect(signGeregeWebhook('s', Buffer.from(body), 1764400000.9)).toBe(`t=1764400000,v1=${hmacHex('s', `1764400000.${body}`)}`);
    expect(signQutpayWebhook('s', body)).toBe(`sha256=${hmacHex('s', body)}`);
  });
});

describe('webhook retries', () => {
  it('gerege gives up after 8 attempts against a receiver that always answers 500', async () => {
    const receiver = await startReceiver(() => 500);
    const sim = await startSimulator({ provider: 'gerege', webhookUrl: receiver.url, webhookRetryDelaysMs: [2] });
    const api = await geregeClient(sim);
    await api.post('/payment-intents', intentBody(), 'r-1');
    await sim.waitForDeliveriesIdle();
    const deliveries = sim.records().deliveries;
    expect(deliveries.map((d) => d.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(deliveries.every((d) => d.status === 500)).toBe(true);
    expect(receiver.received).toHaveLength(8);
    expect(new Set(receiver.received.map((r) => r.headers['gerege-event-id'])).size).toBe(1);
  });

  it('qutpay gives up after 11 attempts against a receiver that always answers 500', async () => {
    const receiver = await startReceiver(() => 500);
    const sim = await startSimulator({ provider: 'qutpay', webhookUrl: receiver.url, webhookRetryDelaysMs: [2] });
    await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'r-2');
    await sim.waitForDeliveriesIdle();
    expect(sim.records().deliveries.map((d) => d.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(receiver.received).toHaveLength(11);
  });

  it('stops retrying at the first 2xx, and retries network errors the same way', async () => {
    const receiver = await startReceiver((n) => (n <= 2 ? 503 : 204));
    const sim = await startSimulator({ provider: 'qutpay', webhookUrl: receiver.url, webhookRetryDelaysMs: [2] });
    await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'r-3');
    await sim.waitForDeliveriesIdle();
    expect(sim.records().deliveries.map((d) => d.status)).toEqual([503, 503, 204]);

    const nowhere = await startSimulator({
      provider: 'qutpay',
      webhookUrl: 'http://127.0.0.1:1/webhooks',
      webhookRetryDelaysMs: [1],
      webhookMaxAttempts: 3,
    });
    await qutpayClient(nowhere).post('/api/v1/invoices', invoiceBody(), 'r-4');
    await nowhere.waitForDeliveriesIdle();
    expect(nowhere.records().deliveries.map((d) => d.status)).toEqual(['error', 'error', 'error']);
  });

  it('waits between attempts per webhookRetryDelaysMs, the last delay repeating', async () => {
    const receiver = await startReceiver(() => 500);
    const sim = await startSimulator({
      provider: 'gerege',
      webhookUrl: receiver.url,
      webhookRetryDelaysMs: [5, 60],
      webhookMaxAttempts: 4,
    });
    const api = await geregeClient(sim);
    await api.post('/payment-intents', intentBody(), 'r-5');
    await sim.waitForDeliveriesIdle();
    const at = sim.records().deliveries.map((d) => d.at);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(55);
    expect(at[3]! - at[2]!).toBeGreaterThanOrEqual(55);
  });

  it('without a webhookUrl nothing is delivered but events are still recorded', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'r-6');
    await sim.waitForDeliveriesIdle(100);
    expect(sim.records().events).toHaveLength(1);
    expect(sim.records().deliveries).toHaveLength(0);
  });

  it('stop() cancels scheduled retries and waitForDeliveriesIdle resolves', async () => {
    const receiver = await startReceiver(() => 500);
    const sim = await startSimulator({ provider: 'qutpay', webhookUrl: receiver.url, webhookRetryDelaysMs: [60_000] });
    await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'r-7');
    await waitFor(() => receiver.received.length === 1, { what: 'the first attempt' });
    await expect(sim.waitForDeliveriesIdle(20)).rejects.toThrow(/still pending/);
    const idle = sim.waitForDeliveriesIdle(5000);
    await sim.stop();
    await idle;
    await sim.stop();
    expect(receiver.received).toHaveLength(1);
  });

  it('an expiry with nobody reading still sends payment_intent.expired (background sweep)', async () => {
    const clock = createManualClock();
    const receiver = await startReceiver();
    const sim = await startSimulator({ provider: 'gerege', clock, webhookUrl: receiver.url, expirySweepMs: 10 });
    const api = await geregeClient(sim);
    await api.post('/payment-intents', intentBody({ expires_in: 30 }), 'r-8');
    clock.advance(30_000);
    await waitFor(() => receiver.bodies().some((b) => b.type === 'payment_intent.expired'), { what: 'the expired webhook' });
  });
});
