import { describe, expect, it } from 'vitest';
import { signGeregeTestPayload } from '../../src/payments/adapters.js';
import { geregeEventBody, startListener, testDb } from './webhook-harness.js';

describe('webhook listener', () => {
  it('stores a valid event once, with its exact raw bytes, and answers 200', async () => {
    const listener = await startListener();
    const body = geregeEventBody({ id: 'evt_one', intentId: 'pi_1' });
    const answer = await listener.post(body, listener.signedHeaders(body));
    expect(answer).toEqual({ status: 200, json: { received: true, duplicate: false } });
    const rows = listener.rows();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      event_id: 'evt_one',
      provider: 'gerege',
      type: 'payment_intent.succeeded',
      object_id: 'pi_1',
      livemode: 0,
      source: 'webhook',
      processed_at: null,
      attempts: 0,
    });
    expect(Buffer.compare(rows[0]!.raw_body, body)).toBe(0);
    expect(listener.accepted).toEqual(['evt_one']);
  });

  it('acknowledges a duplicate delivery with 2xx, writes nothing new and does not wake the worker again', async () => {
    const listener = await startListener();
    const body = geregeEventBody({ id: 'evt_twice' });
    await listener.post(body, listener.signedHeaders(body));
    listener.clock.advance(5_000);
    const again = await listener.post(body, listener.signedHeaders(body));
    expect(again).toEqual({ status: 200, json: { received: true, duplicate: true } });
    expect(listener.rows()).toHaveLength(1);
    expect(listener.accepted).toEqual(['evt_twice']);
    expect(listener.delivered()).toBe(2);
  });

  it('stores concurrent deliveries (committed together) each once, and answers each after its commit', async () => {
    const listener = await startListener();
    const bodies = Array.from({ length: 30 }, (_, i) => geregeEventBody({ id: `evt_burst_${i}` }));
    // The same event twice in one burst: one row, one duplicate answer.
    bodies.push(bodies[0]!);
    const answers = await Promise.all(bodies.map((body) => listener.post(body, listener.signedHeaders(body))));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.json.duplicate)).toHaveLength(1);
    expect(listener.rows()).toHaveLength(30);
    expect(new Set(listener.accepted).size).toBe(30);
  });

  it('stores an unknown event type already processed and answers 2xx, without handing it to the worker', async () => {
    const listener = await startListener();
    const body = geregeEventBody({ id: 'evt_new_type', type: 'payout.paid' });
    expect((await listener.post(body, listener.signedHeaders(body))).status).toBe(200);
    expect(listener.rows()[0]).toMatchObject({ event_id: 'evt_new_type', type: 'payout.paid' });
    expect(listener.rows()[0]!.processed_at).toBe(listener.clock.now());
    expect(listener.accepted).toEqual([]);
  });

  it('refuses a bad signature, a missing signature, a stale timestamp and malformed JSON with 400 and writes nothing', async () => {
    const listener = await startListener();
    const body = geregeEventBody();
    const headers = listener.signedHeaders(body);
    const cases: Array<[string, Buffer | string, Record<string, string>]> = [
      // The first hex digit of the signature changed to another digit (it is '0' one time in sixteen).
      [
        'bad signature',
        body,
        { ...headers, 'gerege-signature': headers['gerege-signature']!.replace(/v1=(.)/, (_, c: string) => `v1=${c === '0' ? '1' : '0'}`) },
      ],
      ['wrong secret', body, { ...headers, 'gerege-signature': signGeregeTestPayload(body, 'whsec_other', listener.nowSec()) }],
      ['missing signature', body, { 'content-type': 'application/json' }],
      ['stale timestamp', body, listener.signedHeaders(body, { tSec: listener.nowSec() - 301 })],
      ['future timestamp', body, listener.signedHeaders(body, { tSec: listener.nowSec() + 301 })],
      ['body changed after signing', Buffer.concat([body, Buffer.from(' ')]), headers],
      ['signed non-JSON', Buffer.from('not json'), listener.signedHeaders(Buffer.from('not json'))],
      ['signed JSON that is not an event', Buffer.from('{"hello":1}'), listener.signedHeaders(Buffer.from('{"hello":1}'))],
      ['empty body', Buffer.alloc(0), listener.signedHeaders(Buffer.alloc(0))],
    ];
    for (const [name, payload, h] of cases) {
      const answer = await listener.post(payload, h);
      expect(answer.status, name).toBe(400);
      expect(answer.json.error, name).toMatch(/^VG_ERR_WEBHOOK_(SIGNATURE|MALFORMED)$/);
    }
    expect(listener.rows()).toEqual([]);
    expect(listener.accepted).toEqual([]);
    expect(listener.delivered()).toBe(0);
  });

  it('refuses a content type other than JSON (415) and a body over the limit (413), writing nothing', async () => {
    const listener = await startListener({ bodyLimitBytes: 2_048 });
    const body = geregeEventBody();
    const signed = listener.signedHeaders(body);
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x']) {
      expect((await listener.post(body, { ...signed, 'content-type': type })).status, type).toBe(415);
    }
    const huge = geregeEventBody({ intentId: `pi_${'x'.repeat(4_000)}` });
    const answer = await listener.post(huge, listener.signedHeaders(huge));
    expect(answer.status).toBe(413);
    expect(answer.json).toEqual({ error: 'VG_ERR_WEBHOOK_MALFORMED', reason: 'body_too_large' });
    expect(listener.rows()).toEqual([]);
  });

  it('serves only POST /webhooks/<provider> and GET /webhooks/health; everything else is 404', async () => {
    const listener = await startListener();
    const health = await fetch(`${listener.url}/webhooks/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const body = geregeEventBody();
    const signed = listener.signedHeaders(body);
    expect((await listener.post(body, signed, '/webhooks/qutpay')).status).toBe(404);
    expect((await listener.post(body, signed, '/webhooks/sandbox')).status).toBe(404);
    expect((await listener.post(body, signed, '/api/orders')).status).toBe(404);
    for (const path of [
      '/',
      '/webhooks/gerege',
      '/api/state',
      '/healthz',
      '/metrics',
      '/index.html',
      '/webhooks/health/../../etc/passwd',
    ]) {
      expect((await fetch(`${listener.url}${path}`)).status, path).toBe(404);
    }
    expect(listener.rows()).toEqual([]);
  });

  it('accepts every configured secret and logs which one matched by index, never the secret itself', async () => {
    const listener = await startListener();
    const current = geregeEventBody({ id: 'evt_current' });
    const previous = geregeEventBody({ id: 'evt_previous' });
    expect((await listener.post(current, listener.signedHeaders(current, { secretIndex: 0 }))).status).toBe(200);
    expect((await listener.post(previous, listener.signedHeaders(previous, { secretIndex: 1 }))).status).toBe(200);
    const accepted = listener.log.lines().filter((l) => l.msg === 'webhook accepted');
    expect(accepted.map((l) => [l.eventId, l.secretIndex])).toEqual([
      ['evt_current', 0],
      ['evt_previous', 1],
    ]);
    for (const secret of listener.secrets) expect(listener.log.text()).not.toContain(secret);
  });

  it('logs an accepted event the worker has nothing to do for at debug, one it must process at info', async () => {
    const listener = await startListener();
    const ignored = geregeEventBody({ id: 'evt_ignored', type: 'customer.updated' });
    const handled = geregeEventBody({ id: 'evt_handled' });
    expect((await listener.post(ignored, listener.signedHeaders(ignored))).status).toBe(200);
    expect((await listener.post(handled, listener.signedHeaders(handled))).status).toBe(200);
    const accepted = listener.log.lines().filter((l) => l.msg === 'webhook accepted');
    expect(accepted.map((l) => [l.eventId, l.level, l.handled])).toEqual([
      ['evt_ignored', 20, false],
      ['evt_handled', 30, true],
    ]);
  });

  it("logs a skew warning when the provider's Date header is more than 60 s from our clock", async () => {
    const listener = await startListener();
    const near = geregeEventBody();
    await listener.post(near, { ...listener.signedHeaders(near), date: new Date(listener.clock.now() - 30_000).toUTCString() });
    expect(listener.log.lines().some((l) => 'skewSec' in l)).toBe(false);
    const far = geregeEventBody();
    await listener.post(far, { ...listener.signedHeaders(far), date: new Date(listener.clock.now() - 120_000).toUTCString() });
    expect(listener.log.lines().find((l) => 'skewSec' in l)).toMatchObject({ level: 40, skewSec: 120 });
    expect(listener.rows()).toHaveLength(2);
  });

  it('answers 500 when the database cannot store the event, so the provider retries', async () => {
    const db = testDb();
    const listener = await startListener({ db });
    db.close();
    const body = geregeEventBody();
    const answer = await listener.post(body, listener.signedHeaders(body));
    expect(answer).toEqual({ status: 500, json: { error: 'VG_ERR_DATABASE', reason: 'storage_failed' } });
    expect(listener.accepted).toEqual([]);
  });

  it('takes QutPay deliveries on /webhooks/qutpay with the (invoice, status) dedupe key', async () => {
    const listener = await startListener({ provider: 'qutpay' });
    const body = Buffer.from(
      JSON.stringify({ event: 'invoice.paid', invoice: { id: 'inv_7', status: 'paid', amount: 2500, livemode: false } }),
    );
    expect((await listener.post(body, listener.signedHeaders(body))).status).toBe(200);
    expect((await listener.post(body, listener.signedHeaders(body))).json).toEqual({ received: true, duplicate: true });
    expect(listener.rows()).toEqual([
      expect.objectContaining({ event_id: 'inv_7:paid', provider: 'qutpay', object_id: 'inv_7', type: 'invoice.paid' }),
    ]);
    const forged = Buffer.from(body.toString().replace('2500', '25'));
    expect((await listener.post(forged, listener.signedHeaders(body))).status).toBe(400);
    expect(listener.rows()).toHaveLength(1);
  });
});
