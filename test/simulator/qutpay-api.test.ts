import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/util/index.js';
import { invoiceBody, qutpayClient, startSimulator } from './harness.js';

describe('qutpay simulator: auth', () => {
  it('refuses every route without the right X-API-Key with 401 unauthorized', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const wrong = qutpayClient(sim, 'qp_test_wrong');
    const create = await wrong.post('/api/v1/invoices', invoiceBody(), 'k');
    expect(create.status).toBe(401);
    expect(create.json).toEqual({ error: 'unauthorized', message: expect.any(String) });
    expect((await wrong.get('/api/v1/invoices/inv_x')).status).toBe(401);
    expect((await fetch(`${sim.url}/api/v1/invoices/inv_x`)).status).toBe(401);
    expect(sim.records().invoices).toHaveLength(0);
  });
});

describe('qutpay simulator: invoices', () => {
  it('creates a pending invoice with 201 in the wire format', async () => {
    const clock = createManualClock();
    const sim = await startSimulator({ provider: 'qutpay', clock, invoiceTtlSec: 300 });
    const api = qutpayClient(sim);
    const created = await api.post('/api/v1/invoices', invoiceBody(), 'order-1001-pay');
    expect(created.status).toBe(201);
    expect(Object.keys(created.json)).toEqual([
      'id',
      'status',
      'amount',
      'description',
      'externalOrderId',
      'payUrl',
      'qr',
      'expiresAt',
      'livemode',
    ]);
    expect(created.json).toMatchObject({
      status: 'pending',
      amount: 2500,
      description: 'Turnstile fare',
      externalOrderId: 'vm-001-42',
      livemode: false,
    });
    expect(created.json.id).toMatch(/^inv_/);
    expect(created.json.expiresAt).toBe(new Date(clock.now() + 300_000).toISOString());
    expect(sim.records().invoices[0]).toMatchObject({ idempotencyKey: 'order-1001-pay', reference: 'vm-001-42', currency: 'KZT' });
  });

  it('a replay with the same key answers 200 idempotentReplay with the EARLIER invoice, even with another amount', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const api = qutpayClient(sim);
    const first = await api.post('/api/v1/invoices', invoiceBody(), 'order-1001-pay');
    const replay = await api.post('/api/v1/invoices', invoiceBody({ amount: 9999 }), 'order-1001-pay');
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual({ ...first.json, idempotentReplay: true });
    const other = await api.post('/api/v1/invoices', invoiceBody({ amount: 9999 }), 'order-1001-pay-2');
    expect(other.status).toBe(201);
    expect(other.json.amount).toBe(9999);
    expect(sim.records().createCalls.map((c) => c.outcome)).toEqual(['created', 'replayed', 'created']);
  });

  it('without an Idempotency-Key every call makes a new invoice', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const api = qutpayClient(sim);
    const a = await api.post('/api/v1/invoices', invoiceBody());
    const b = await api.post('/api/v1/invoices', invoiceBody());
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.json.id).not.toBe(b.json.id);
  });

  it('rejects a bad body with 400 invalid_request and creates nothing', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const api = qutpayClient(sim);
    const bad = await api.post('/api/v1/invoices', invoiceBody({ amount: 0, currency: 'KZT' }), 'k-bad');
    expect(bad.status).toBe(400);
    expect(bad.json.error).toBe('invalid_request');
    expect(bad.json.message).toContain('currency');
    expect(sim.records().invoices).toHaveLength(0);
  });

  it('GET returns the invoice with its refunds, 404 not_found for an unknown id', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const api = qutpayClient(sim);
    const { json: invoice } = await api.post('/api/v1/invoices', invoiceBody(), 'k-get');
    const read = await api.get(`/api/v1/invoices/${invoice.id}?live=true`);
    expect(read.json).toEqual({ ...invoice, refunds: [] });
    const missing = await api.get('/api/v1/invoices/inv_nope');
    expect(missing).toMatchObject({ status: 404, json: { error: 'not_found' } });
    expect(sim.records().getCalls.map((g) => g.id)).toEqual([invoice.id, 'inv_nope']);
  });

  it('cancel is idempotent, and a cancelled QR can still be paid until expiresAt', async () => {
    const clock = createManualClock();
    const sim = await startSimulator({ provider: 'qutpay', clock, invoiceTtlSec: 120 });
    const api = qutpayClient(sim);
    const { json: invoice } = await api.post('/api/v1/invoices', invoiceBody(), 'k-cancel');
    expect((await api.post(`/api/v1/invoices/${invoice.id}/cancel`)).json.status).toBe('cancelled');
    expect((await api.post(`/api/v1/invoices/${invoice.id}/cancel`)).json.status).toBe('cancelled');
    clock.advance(119_000);
    await sim.pay(invoice.id);
    expect((await api.get(`/api/v1/invoices/${invoice.id}`)).json.status).toBe('paid');
    expect(sim.records().events.map((e: any) => e.event)).toEqual(['invoice.pending', 'invoice.cancelled', 'invoice.paid']);
    // Cancelling a paid invoice changes nothing.
    expect((await api.post(`/api/v1/invoices/${invoice.id}/cancel`)).json.status).toBe('paid');
  });

  it('a cancelled invoice cannot be paid after expiresAt; an open one reads as expired', async () => {
    const clock = createManualClock();
    const sim = await startSimulator({ provider: 'qutpay', clock, invoiceTtlSec: 120, expirySweepMs: 0 });
    const api = qutpayClient(sim);
    const { json: cancelled } = await api.post('/api/v1/invoices', invoiceBody(), 'k-a');
    const { json: open } = await api.post('/api/v1/invoices', invoiceBody(), 'k-b');
    await api.post(`/api/v1/invoices/${cancelled.id}/cancel`);
    clock.advance(120_000);
    await expect(sim.pay(cancelled.id)).rejects.toThrow(/cannot be paid/);
    expect((await api.get(`/api/v1/invoices/${open.id}`)).json.status).toBe('expired');
    expect((await api.get(`/api/v1/invoices/${cancelled.id}`)).json.status).toBe('cancelled');
    await expect(sim.pay(open.id)).rejects.toThrow(/expired/);
  });

  it('fail() declines an open invoice; expire() ends it now', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const api = qutpayClient(sim);
    const { json: a } = await api.post('/api/v1/invoices', invoiceBody(), 'k-f');
    const { json: b } = await api.post('/api/v1/invoices', invoiceBody(), 'k-e');
    sim.fail(a.id);
    sim.expire(b.id);
    expect((await api.get(`/api/v1/invoices/${a.id}`)).json.status).toBe('failed');
    expect((await api.get(`/api/v1/invoices/${b.id}`)).json.status).toBe('expired');
    expect(() => sim.fail(a.id)).toThrow();
  });
});

describe('qutpay simulator: refunds', () => {
  it('partial then full refund: paid → partially_refunded → refunded, with the refunds listed on the invoice', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const api = qutpayClient(sim);
    const { json: invoice } = await api.post('/api/v1/invoices', invoiceBody(), 'k-r');
    expect((await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 100 }, 'rf-0')).status).toBe(400);
    await sim.pay(invoice.id);
    const first = await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 1000 }, 'rf-1');
    expect(first.status).toBe(201);
    expect(first.json).toEqual({ id: expect.stringMatching(/^rf_/), status: 'succeeded' });
    expect((await api.get(`/api/v1/invoices/${invoice.id}`)).json.status).toBe('partially_refunded');
    const replay = await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 1000 }, 'rf-1');
    expect(replay).toMatchObject({ status: 200, json: first.json });
    expect((await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 1501 }, 'rf-2')).status).toBe(400);
    const missingKey = await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 1500 });
    expect(missingKey).toMatchObject({ status: 400, json: { error: 'invalid_request' } });
    await api.post(`/api/v1/invoices/${invoice.id}/refund`, { amount: 1500 }, 'rf-3');
    const read = await api.get(`/api/v1/invoices/${invoice.id}`);
    expect(read.json.status).toBe('refunded');
    expect(read.json.refunds).toEqual([
      { id: first.json.id, amount: 1000, status: 'succeeded' },
      { id: expect.any(String), amount: 1500, status: 'succeeded' },
    ]);
    expect(sim.records().events.map((e: any) => e.event)).toEqual([
      'invoice.pending',
      'invoice.paid',
      'invoice.partially_refunded',
      'invoice.refunded',
    ]);
    expect(sim.records().refunds).toHaveLength(2);
  });
});
