import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/util/index.js';
import { geregeClient, intentBody, requestToken, startSimulator } from './harness.js';

describe('gerege simulator: auth', () => {
  it('issues a bearer token for the right client credentials and refuses wrong ones with invalid_client', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const ok = await requestToken(sim, 'sim-client', 'sim-secret');
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600 });
    const wrong = await requestToken(sim, 'sim-client', 'nope');
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe('invalid_client');
    const badGrant = await requestToken(sim, 'sim-client', 'sim-secret', 'grant_type=password');
    expect(badGrant.status).toBe(400);
  });

  it('refuses API calls without a token, with an unknown token and with an expired token', async () => {
    const clock = createManualClock();
    const sim = await startSimulator({ provider: 'gerege', clock, tokenTtlSec: 60 });
    const api = await geregeClient(sim);
    expect((await api.get('/events')).status).toBe(200);
    const missing = await fetch(`${sim.url}/payment-intents/pi_x`);
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as any).error.code).toBe('invalid_token');
    clock.advance(60_000);
    expect((await api.get('/events')).status).toBe(401);
    api.token = 'gat_forged';
    expect((await api.get('/events')).status).toBe(401);
  });

  it('revokeTokens makes the next call answer 401 so clients must refresh', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    sim.revokeTokens();
    expect((await api.get('/events')).status).toBe(401);
    const fresh = await geregeClient(sim);
    expect((await fresh.get('/events')).status).toBe(200);
  });
});

describe('gerege simulator: creating payment intents', () => {
  it('returns the wire-format intent with 201, and the same intent with 200 for the same key and the same normalised body', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const first = await api.post('/payment-intents', intentBody(), 'order-8812');
    expect(first.status).toBe(201);
    expect(Object.keys(first.json)).toEqual([
      'id',
      'object',
      'status',
      'amount',
      'currency',
      'reference',
      'livemode',
      'pay_url',
      'expires_at',
      'created',
    ]);
    // Not in the wire format: a refund is a `re_…` object, seen as its event (geregeAmountRefunded serves it).
    expect(first.json).not.toHaveProperty('amount_refunded');
    expect(first.json).toMatchObject({
      object: 'payment_intent',
      status: 'requires_payment',
      amount: 1500,
      currency: 'MNT',
      reference: 'vm-001-42',
      livemode: false,
    });
    expect(first.json.id).toMatch(/^pi_/);
    expect(first.json.expires_at - first.json.created).toBe(120);

    // Field order and whitespace do not matter.
    const reordered = `{ "expires_in": 120, "capture_method": "automatic", "description": "Cola",\n "reference": "vm-001-42", "currency": "MNT", "amount": 1500 }`;
    const replay = await api.post('/payment-intents', reordered, 'order-8812');
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual(first.json);
    expect(sim.records().invoices).toHaveLength(1);
    expect(sim.records().createCalls.map((c) => c.outcome)).toEqual(['created', 'replayed']);
  });

  it('answers 409 idempotency_conflict for the same key with a different body, and creates nothing', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    await api.post('/payment-intents', intentBody(), 'order-1');
    const conflict = await api.post('/payment-intents', intentBody({ amount: 1600 }), 'order-1');
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.code).toBe('idempotency_conflict');
    expect(sim.records().invoices).toHaveLength(1);
    expect(sim.records().createCalls.at(-1)!.outcome).toBe('conflict');
  });

  it('requires an Idempotency-Key of 1-128 characters', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const missing = await api.post('/payment-intents', intentBody());
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('Idempotency-Key') });
    expect((await api.post('/payment-intents', intentBody(), 'k'.repeat(129))).status).toBe(400);
    expect((await api.post('/payment-intents', intentBody(), 'k'.repeat(128))).status).toBe(201);
    expect(sim.records().invoices).toHaveLength(1);
  });

  it('rejects a bad body with 400 invalid_request naming every bad field, and creates nothing', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const bad = await api.post('/payment-intents', intentBody({ amount: -5, currency: 'mnt', capture_method: 'later' }), 'bad-1');
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('invalid_request');
    expect(bad.json.error.message).toMatch(/amount.*currency.*capture_method/s);
    const unknown = await api.post('/payment-intents', { ...intentBody(), expiresIn: 120 }, 'bad-2');
    expect(unknown.json.error.message).toContain('expiresIn');
    const notJson = await api.post('/payment-intents', '{"amount":', 'bad-3');
    expect(notJson.status).toBe(400);
    expect(sim.records().invoices).toHaveLength(0);
    // A rejected body does not use up the key.
    expect((await api.post('/payment-intents', intentBody(), 'bad-1')).status).toBe(201);
  });

  it('answers 404 not_found for an unknown intent and records the read', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const missing = await api.get('/payment-intents/pi_nope');
    expect(missing.status).toBe(404);
    expect(missing.json.error.code).toBe('not_found');
    expect(sim.records().getCalls).toEqual([{ id: 'pi_nope', at: expect.any(Number) }]);
  });
});

describe('gerege simulator: status machine', () => {
  it('pay() moves an automatic intent through claimed and processing to succeeded, one event each', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody(), 'o-1');
    await sim.pay(intent.id);
    expect((await api.get(`/payment-intents/${intent.id}`)).json.status).toBe('succeeded');
    expect(sim.records().events.map((e: any) => e.type)).toEqual([
      'payment_intent.created',
      'payment_intent.claimed',
      'payment_intent.processing',
      'payment_intent.succeeded',
    ]);
    expect(sim.records().invoices[0]).toMatchObject({ status: 'succeeded', paidAt: expect.any(Number), captureMethod: 'automatic' });
    await expect(sim.pay(intent.id)).rejects.toThrow(/cannot be paid/);
  });

  it('lastEvent finds the last matching event as records() would, as a copy the caller cannot change', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: first } = await api.post('/payment-intents', intentBody(), 'o-le-1');
    const { json: second } = await api.post('/payment-intents', intentBody({ reference: 'vm-001-77' }), 'o-le-2');
    await sim.pay(first.id);
    await sim.pay(second.id);
    const succeededFor = (id: string) => (e: any) => e.type === 'payment_intent.succeeded' && e.data?.object?.id === id;
    for (const id of [first.id, second.id]) {
      const found: any = sim.lastEvent(succeededFor(id));
      expect(found).toEqual(sim.records().events.findLast(succeededFor(id)));
      expect(found.data.object.id).toBe(id);
      found.type = 'changed by the caller';
      expect(sim.lastEvent(succeededFor(id))).toMatchObject({ type: 'payment_intent.succeeded' });
    }
    expect(sim.lastEvent((e: any) => e.type === 'payment_intent.refunded')).toBeNull();
  });

  it('manual capture: pay() holds the money in requires_capture, capture succeeds once and is idempotent', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody({ capture_method: 'manual' }), 'o-2');
    const early = await api.post(`/payment-intents/${intent.id}/capture`);
    expect(early.status).toBe(400);
    expect(early.json.error.code).toBe('invalid_state');
    await sim.pay(intent.id);
    expect((await api.get(`/payment-intents/${intent.id}`)).json.status).toBe('requires_capture');
    const captured = await api.post(`/payment-intents/${intent.id}/capture`, {});
    expect(captured).toMatchObject({ status: 200, json: { status: 'succeeded' } });
    expect((await api.post(`/payment-intents/${intent.id}/capture`)).json.status).toBe('succeeded');
    expect(sim.records().events.filter((e: any) => e.type === 'payment_intent.succeeded')).toHaveLength(1);
  });

  it('cancel is idempotent by state: an open intent becomes canceled, a succeeded one is returned as it is', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: open } = await api.post('/payment-intents', intentBody(), 'o-3');
    expect((await api.post(`/payment-intents/${open.id}/cancel`)).json.status).toBe('canceled');
    expect((await api.post(`/payment-intents/${open.id}/cancel`)).json.status).toBe('canceled');
    await expect(sim.pay(open.id)).rejects.toThrow();
    const { json: paid } = await api.post('/payment-intents', intentBody({ reference: 'vm-001-43' }), 'o-4');
    await sim.pay(paid.id);
    const cancelPaid = await api.post(`/payment-intents/${paid.id}/cancel`);
    expect(cancelPaid).toMatchObject({ status: 200, json: { status: 'succeeded' } });
    expect(sim.records().events.filter((e: any) => e.type === 'payment_intent.canceled')).toHaveLength(1);
  });

  it('cancel of an authorized (requires_capture) intent releases it as canceled', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody({ capture_method: 'manual' }), 'o-5');
    await sim.pay(intent.id);
    expect((await api.post(`/payment-intents/${intent.id}/cancel`)).json.status).toBe('canceled');
  });

  it('an intent not paid by expires_at reads as expired, emits payment_intent.expired once, and cannot be paid', async () => {
    const clock = createManualClock();
    const sim = await startSimulator({ provider: 'gerege', clock, expirySweepMs: 0 });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody({ expires_in: 60 }), 'o-6');
    clock.advance(59_000);
    expect((await api.get(`/payment-intents/${intent.id}`)).json.status).toBe('requires_payment');
    clock.advance(1_000);
    expect((await api.get(`/payment-intents/${intent.id}`)).json.status).toBe('expired');
    expect((await api.get(`/payment-intents/${intent.id}`)).json.status).toBe('expired');
    expect(sim.records().events.filter((e: any) => e.type === 'payment_intent.expired')).toHaveLength(1);
    await expect(sim.pay(intent.id)).rejects.toThrow(/expired/);
  });

  it('expire() ends an open intent now, and leaves a paid one alone', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: a } = await api.post('/payment-intents', intentBody(), 'o-7');
    const { json: b } = await api.post('/payment-intents', intentBody({ reference: 'x' }), 'o-8');
    await sim.pay(b.id);
    sim.expire(a.id);
    sim.expire(b.id);
    expect((await api.get(`/payment-intents/${a.id}`)).json.status).toBe('expired');
    expect((await api.get(`/payment-intents/${b.id}`)).json.status).toBe('succeeded');
    expect(() => sim.expire('pi_unknown')).toThrow(/no payment intent/);
  });

  it('pay() with another amount makes the intent report that amount (for mismatch tests)', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody(), 'o-9');
    await sim.pay(intent.id, { amount: 1 });
    expect((await api.get(`/payment-intents/${intent.id}`)).json).toMatchObject({ status: 'succeeded', amount: 1 });
  });
});

describe('gerege simulator: refunds', () => {
  it('refunds a succeeded intent up to its amount, replays the same key, and refuses a different body with 409', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody(), 'o-10');
    const early = await api.post(`/payment-intents/${intent.id}/refunds`, { amount: 100 }, 'r-0');
    expect(early.status).toBe(400);
    expect(early.json.error.code).toBe('invalid_state');
    await sim.pay(intent.id);
    const first = await api.post(`/payment-intents/${intent.id}/refunds`, { amount: 1000 }, 'r-1');
    expect(first.status).toBe(201);
    expect(first.json).toEqual({
      id: expect.stringMatching(/^re_/),
      object: 'refund',
      payment_intent: intent.id,
      amount: 1000,
      status: 'succeeded',
    });
    const replay = await api.post(`/payment-intents/${intent.id}/refunds`, { amount: 1000 }, 'r-1');
    expect(replay).toMatchObject({ status: 200, json: first.json });
    expect((await api.post(`/payment-intents/${intent.id}/refunds`, { amount: 999 }, 'r-1')).status).toBe(409);
    const tooMuch = await api.post(`/payment-intents/${intent.id}/refunds`, { amount: 501 }, 'r-2');
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.json.error.message).toContain('500');
    expect((await api.post(`/payment-intents/${intent.id}/refunds`, { amount: 500 })).status).toBe(400);
    expect((await api.post(`/payment-intents/${intent.id}/refunds`, { amount: 500 }, 'r-3')).status).toBe(201);
    expect(sim.records().refunds.map((r) => r.amount)).toEqual([1000, 500]);
    expect(sim.records().events.filter((e: any) => e.type === 'refund.succeeded')).toHaveLength(2);
  });

  it('a key used for a create cannot be reused for a refund', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody(), 'shared-key');
    await sim.pay(intent.id);
    expect((await api.post(`/payment-intents/${intent.id}/refunds`, { amount: 1 }, 'shared-key')).status).toBe(409);
  });
});

describe('gerege simulator: Events API', () => {
  it('pages events oldest first with limit, has_more and starting_after, filtered by created_after', async () => {
    const clock = createManualClock();
    const sim = await startSimulator({ provider: 'gerege', clock });
    const api = await geregeClient(sim);
    const { json: a } = await api.post('/payment-intents', intentBody(), 'e-1');
    clock.advance(10_000);
    await sim.pay(a.id);
    const all = sim.records().events as Array<{ id: string; created: number }>;
    expect(all).toHaveLength(4);

    const page1 = await api.get('/events?limit=3');
    expect(page1.json.data.map((e: any) => e.id)).toEqual(all.slice(0, 3).map((e) => e.id));
    expect(page1.json.has_more).toBe(true);
    const page2 = await api.get(`/events?limit=3&starting_after=${page1.json.data[2].id}`);
    expect(page2.json.data.map((e: any) => e.id)).toEqual([all[3]!.id]);
    expect(page2.json.has_more).toBe(false);
    expect(page2.json.data[0]).toEqual(all[3]);

    const later = await api.get(`/events?created_after=${all[1]!.created}`);
    expect(later.json.data.map((e: any) => e.type)).toEqual([
      'payment_intent.claimed',
      'payment_intent.processing',
      'payment_intent.succeeded',
    ]);
    expect((await api.get('/events?limit=0')).status).toBe(400);
    expect((await api.get('/events?starting_after=evt_unknown')).status).toBe(400);
  });
});
