import { describe, expect, it } from 'vitest';
import type { SimulatorOptions } from '../../src/simulator/index.js';
import { geregeClient, intentBody, invoiceBody, qutpayClient, startReceiver, startSimulator } from './harness.js';
import { waitFor } from '../helpers/wait.js';

/** A QutPay simulator with `options` (its faults, its timings), sending its webhooks to a fresh receiver. */
async function qutpayToReceiver(options: Partial<SimulatorOptions>) {
  const receiver = await startReceiver();
  const sim = await startSimulator({ provider: 'qutpay', webhookUrl: receiver.url, ...options });
  return { receiver, sim };
}

describe('webhook faults', () => {
  it('duplicateWebhook delivers every event twice with the same id and body', async () => {
    const receiver = await startReceiver();
    const sim = await startSimulator({ provider: 'gerege', webhookUrl: receiver.url, faults: { duplicateWebhook: 1 } });
    const api = await geregeClient(sim);
    await api.post('/payment-intents', intentBody(), 'd-1');
    await sim.waitForDeliveriesIdle();
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[0]!.body).toBe(receiver.received[1]!.body);
    expect(receiver.received[0]!.headers['gerege-event-id']).toBe(receiver.received[1]!.headers['gerege-event-id']);
    expect(sim.records().deliveries.map((d) => !!d.duplicate)).toEqual([false, true]);
  });

  it('dropWebhook never delivers the event, and records it as dropped', async () => {
    const { receiver, sim } = await qutpayToReceiver({ faults: { dropWebhook: 1 } });
    const { json: invoice } = await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'd-2');
    await sim.pay(invoice.id);
    await sim.waitForDeliveriesIdle();
    expect(receiver.received).toHaveLength(0);
    expect(sim.records().deliveries.map((d) => [d.eventId, d.status])).toEqual([
      [`${invoice.id}:pending`, 'dropped'],
      [`${invoice.id}:paid`, 'dropped'],
    ]);
  });

  it('reorderWebhooks holds an event back and delivers it after the next one', async () => {
    const { receiver, sim } = await qutpayToReceiver({ reorderMaxHoldMs: 10_000, faults: { reorderWebhooks: 1 } });
    const { json: invoice } = await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'd-3');
    await sim.pay(invoice.id);
    await sim.waitForDeliveriesIdle();
    expect(receiver.bodies().map((b) => b.event)).toEqual(['invoice.paid', 'invoice.pending']);
  });

  it('a held-back event with no next event is still delivered after reorderMaxHoldMs', async () => {
    const { receiver, sim } = await qutpayToReceiver({ reorderMaxHoldMs: 20, faults: { reorderWebhooks: 1 } });
    await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'd-4');
    await sim.waitForDeliveriesIdle();
    expect(receiver.bodies().map((b) => b.event)).toEqual(['invoice.pending']);
  });

  it('lateStaleEvent re-delivers an older event of the same object after a later one, byte for byte', async () => {
    const { receiver, sim } = await qutpayToReceiver({ faults: { lateStaleEvent: 1 } });
    const { json: invoice } = await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'd-5');
    await sim.pay(invoice.id);
    await sim.waitForDeliveriesIdle();
    expect(receiver.bodies().map((b) => b.invoice.status)).toEqual(['pending', 'paid', 'pending']);
    expect(receiver.received[2]!.body).toBe(receiver.received[0]!.body);
    expect(sim.records().deliveries.map((d) => !!d.stale)).toEqual([false, false, true]);
  });

  it('delayWebhookMs holds every first attempt back by that long', async () => {
    const { receiver, sim } = await qutpayToReceiver({ faults: { delayWebhookMs: 80 } });
    const started = Date.now();
    await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'd-6');
    await waitFor(() => receiver.received.length === 1, { what: 'the delayed webhook' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
  });

  it('webhookOutage fails every attempt without reaching the receiver; retries deliver once it ends', async () => {
    const { receiver, sim } = await qutpayToReceiver({ webhookRetryDelaysMs: [30], faults: { webhookOutage: true } });
    await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'd-7');
    await waitFor(() => sim.records().deliveries.length >= 2, { what: 'two failed attempts' });
    expect(receiver.received).toHaveLength(0);
    sim.setFaults({ webhookOutage: false });
    await sim.waitForDeliveriesIdle();
    const statuses = sim.records().deliveries.map((d) => d.status);
    expect(statuses.at(-1)).toBe(200);
    expect(statuses.slice(0, -1).every((s) => s === 'error')).toBe(true);
    expect(receiver.received).toHaveLength(1);
  });
});

describe('request faults', () => {
  it('rateLimit answers 429 with Retry-After: 1 and creates nothing; the token route and admin routes are exempt', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    sim.setFaults({ rateLimit: 1 });
    const limited = await api.post('/payment-intents', intentBody(), 'f-1');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.json.error.code).toBe('rate_limited');
    expect((await geregeClient(sim)).token).toBeTruthy();
    expect((await fetch(`${sim.url}/__sim/records`)).status).toBe(200);
    expect(sim.records().invoices).toHaveLength(0);
    expect(sim.records().createCalls).toEqual([{ idempotencyKey: 'f-1', at: expect.any(Number), outcome: 'fault:rateLimit' }]);
  });

  it('serverError answers 500, 502 or 503 in the provider error shape', async () => {
    const sim = await startSimulator({ provider: 'qutpay', faults: { serverError: 1 } });
    const api = qutpayClient(sim);
    for (let i = 0; i < 5; i++) {
      const answer = await api.get('/api/v1/invoices/inv_x');
      expect([500, 502, 503]).toContain(answer.status);
      expect(answer.json.error).toBe('server_error');
    }
  });

  it('timeout never answers: the client gives up and nothing is created', async () => {
    const sim = await startSimulator({ provider: 'qutpay', faults: { timeout: 1 } });
    const client = new AbortController();
    const attempt = fetch(`${sim.url}/api/v1/invoices`, {
      method: 'POST',
      signal: client.signal,
      headers: { 'x-api-key': 'qp_test_simulator', 'content-type': 'application/json', 'idempotency-key': 'f-3' },
      body: JSON.stringify(invoiceBody()),
    });
    // The client gives up only once the simulator holds the request (a fixed client timeout lost
    // the race on a loaded machine: the request was aborted before it reached the simulator).
    await waitFor(() => sim.records().requests.some((r) => r.path === '/api/v1/invoices'), { what: 'the held create' });
    client.abort();
    await expect(attempt).rejects.toThrow();
    expect(sim.records().invoices).toHaveLength(0);
    expect(sim.records().requests.at(-1)).toMatchObject({ method: 'POST', path: '/api/v1/invoices', status: 'timeout' });
    expect(sim.records().createCalls.at(-1)!.outcome).toBe('fault:timeout');
  });

  it('stop() releases requests held by the timeout fault', async () => {
    const sim = await startSimulator({ provider: 'qutpay', faults: { timeout: 1 } });
    const held = fetch(`${sim.url}/api/v1/invoices/inv_x`, { headers: { 'x-api-key': 'qp_test_simulator' } });
    await waitFor(() => sim.records().requests.length === 1, { what: 'the held request' });
    await sim.stop();
    await expect(held).rejects.toThrow();
  });

  it('lostResponse commits the gerege create, drops the answer, and a retry with the same key returns the same intent', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    sim.setFaults({ lostResponse: 1 });
    await expect(api.post('/payment-intents', intentBody(), 'f-5')).rejects.toThrow();
    expect(sim.records().invoices).toHaveLength(1);
    expect(sim.records().createCalls[0]).toMatchObject({ outcome: 'fault:lostResponse', committed: 'created' });
    expect(sim.records().requests.at(-1)!.status).toBe('lost');
    sim.setFaults({ lostResponse: 0 });
    const retry = await api.post('/payment-intents', intentBody(), 'f-5');
    expect(retry.status).toBe(200);
    expect(retry.json.id).toBe(sim.records().invoices[0]!.id);
    expect(sim.records().invoices).toHaveLength(1);
  });

  it('lostResponse commits the qutpay create; the retry is an idempotent replay of that invoice', async () => {
    const sim = await startSimulator({ provider: 'qutpay', faults: { lostResponse: 1 } });
    const api = qutpayClient(sim);
    await expect(api.post('/api/v1/invoices', invoiceBody(), 'f-6')).rejects.toThrow();
    sim.setFaults({ lostResponse: 0 });
    const retry = await api.post('/api/v1/invoices', invoiceBody(), 'f-6');
    expect(retry).toMatchObject({ status: 200, json: { idempotentReplay: true, id: sim.records().invoices[0]!.id } });
    expect(sim.records().invoices).toHaveLength(1);
  });

  it('refundUnknown answers 502 refund_unknown or 504 refund_pending_unknown; the record says whether money moved and the invoice agrees', async () => {
    const sim = await startSimulator({ provider: 'qutpay', seed: 7 });
    const api = qutpayClient(sim);
    const { json: invoice } = await api.post('/api/v1/invoices', invoiceBody(), 'f-7');
    await sim.pay(invoice.id);
    sim.setFaults({ refundUnknown: 1 });
    for (let i = 0; i < 8; i++) {
      const answer = await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 100 }, `rf-${i}`);
      expect([
        [502, 'refund_unknown'],
        [504, 'refund_pending_unknown'],
      ]).toContainEqual([answer.status, answer.json.error]);
    }
    const outcomes = sim.records().refundUnknown;
    expect(outcomes).toHaveLength(8);
    const happened = outcomes.filter((o) => o.happened);
    expect(happened.length).toBeGreaterThan(0);
    expect(happened.length).toBeLessThan(8);
    const read = await api.get(`/api/v1/invoices/${invoice.id}`);
    expect(read.json.refunds.map((r: any) => r.id)).toEqual(happened.map((o) => o.refundId));
    expect(read.json.status).toBe('partially_refunded');
    // A refund that happened is remembered under its key; one that did not leaves the key free.
    sim.setFaults({ refundUnknown: 0 });
    const replay = await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 100 }, happened[0]!.idempotencyKey);
    expect(replay).toMatchObject({ status: 200, json: { id: happened[0]!.refundId } });
    const missed = outcomes.find((o) => !o.happened)!;
    expect((await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 100 }, missed.idempotencyKey)).status).toBe(201);
  });
});

describe('fault configuration', () => {
  it('POST /__sim/faults merges a valid config and refuses an invalid one with 400, changing nothing', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const post = (body: unknown) =>
      fetch(`${sim.url}/__sim/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const ok = await post({ rateLimit: 0.25, webhookOutage: true });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ rateLimit: 0.25, webhookOutage: true, serverError: 0 });
    const bad = await post({ rateLimit: 2, tunnel: true, serverError: 0.5 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).message).toMatch(/rateLimit.*tunnel/s);
    expect(await (await fetch(`${sim.url}/__sim/faults`)).json()).toMatchObject({ rateLimit: 0.25, serverError: 0 });
    expect(() => sim.setFaults({ timeout: -1 })).toThrow(/timeout/);
  });

  it('the same seed and the same calls give the same ids and the same injected faults', async () => {
    const run = async () => {
      const sim = await startSimulator({ provider: 'qutpay', seed: 42, faults: { serverError: 0.5 } });
      const api = qutpayClient(sim);
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push((await api.post('/api/v1/invoices', invoiceBody(), `s-${i}`)).status);
      return { statuses, ids: sim.records().invoices.map((inv) => inv.id) };
    };
    const first = await run();
    const second = await run();
    expect(second).toEqual(first);
    expect(new Set(first.statuses).size).toBeGreaterThan(1);
  });
});
