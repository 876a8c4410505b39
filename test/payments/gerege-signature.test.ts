import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { refusalReason } from './fake-provider-server.js';
import { signGeregeTestPayload, verifyGeregeSignature, verifyGeregeWebhook } from '../../src/payments/gerege/index.js';

const NOW_MS = Date.UTC(2026, 10, 29, 12, 0, 0);
const T = NOW_MS / 1_000;
const SECRET = 'whsec_current';
const OLD = 'whsec_previous';
const event = {
  id: 'evt_1',
  object: 'event',
  type: 'payment_intent.succeeded',
  livemode: false,
  created: T - 5,
  data: { object: { id: 'pi_42', object: 'payment_intent', status: 'succeeded' } },
};
const RAW = Buffer.from(JSON.stringify(event));
const opts = (overrides: Partial<{ secrets: string[]; toleranceSec: number; now: number }> = {}) => ({
  secrets: [SECRET],
  toleranceSec: 300,
  now: NOW_MS,
  ...overrides,
});
const headers = (signature: string, extra: Record<string, string> = {}) => ({
  'gerege-signature': signature,
  'gerege-event-id': 'evt_1',
  ...extra,
});

const reason = refusalReason;

describe('Gerege webhook signatures', () => {
  it('accepts what signGeregeTestPayload signs and says which secret matched', () => {
    const result = verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, SECRET, T)), opts());
    expect(result).toEqual({ secretIndex: 0, timestampSec: T });
  });

  it('signs HMAC-SHA256 over "<t>.<raw body>" in lower-case hex', () => {
    const expected = createHmac('sha256', SECRET).update(`${T}.${RAW.toString()}`).digest('hex');
    expect(signGeregeTestPayload(RAW, SECRET, T)).toBe(`t=${T},v1=${expected}`);
  });

  it('rejects a body changed by one byte', () => {
    const signature = signGeregeTestPayload(RAW, SECRET, T);
    const tampered = Buffer.from(RAW.toString().replace('"livemode":false', '"livemode":true '));
    expect(reason(() => verifyGeregeSignature(tampered, headers(signature), opts()))).toBe('bad_signature');
  });

  it('rejects a body that was parsed and re-serialised, and says so', () => {
    const signature = signGeregeTestPayload(Buffer.from(JSON.stringify(event, null, 2)), SECRET, T);
    expect(() => verifyGeregeSignature(RAW, headers(signature), opts())).toThrow(/parsed or re-encoded before verification/);
  });

  it('rejects a parsed object passed instead of the raw bytes, naming the mistake', () => {
    expect(() => verifyGeregeSignature(event as unknown as Buffer, headers(signGeregeTestPayload(RAW, SECRET, T)), opts())).toThrow(
      /was the body parsed before verification\?/,
    );
  });

  it('rejects a timestamp changed after signing', () => {
    const v1 = signGeregeTestPayload(RAW, SECRET, T).split(',')[1];
    expect(reason(() => verifyGeregeSignature(RAW, headers(`t=${T + 1},${v1}`), opts()))).toBe('bad_signature');
  });

  it('rejects a stale signature beyond the tolerance, in either direction, and accepts one at the edge', () => {
    expect(reason(() => verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, SECRET, T - 301)), opts()))).toBe('stale_timestamp');
    expect(reason(() => verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, SECRET, T + 301)), opts()))).toBe('stale_timestamp');
    expect(verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, SECRET, T - 300)), opts()).secretIndex).toBe(0);
    expect(() => verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, SECRET, T - 400)), opts())).toThrow(
      /clock synchronised \(NTP\)/,
    );
  });

  it('during rotation accepts either secret and reports the index of the one that matched', () => {
    const secrets = [SECRET, OLD];
    expect(verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, OLD, T)), opts({ secrets })).secretIndex).toBe(1);
    expect(verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, SECRET, T)), opts({ secrets })).secretIndex).toBe(0);
    expect(reason(() => verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, 'whsec_other', T)), opts({ secrets })))).toBe(
      'bad_signature',
    );
  });

  it('accepts a header with several v1 values when any one matches', () => {
    const good = signGeregeTestPayload(RAW, SECRET, T).split(',')[1];
    const bad = signGeregeTestPayload(RAW, 'whsec_other', T).split(',')[1];
    expect(verifyGeregeSignature(RAW, headers(`t=${T},${bad},${good}`), opts()).secretIndex).toBe(0);
    expect(verifyGeregeSignature(RAW, headers(`t=${T}, ${bad}, v0=abc, ${good}`), opts()).secretIndex).toBe(0);
  });

  it('rejects a missing, empty or shapeless header as missing_signature', () => {
    expect(reason(() => verifyGeregeSignature(RAW, {}, opts()))).toBe('missing_signature');
    expect(reason(() => verifyGeregeSignature(RAW, { 'gerege-signature': '' }, opts()))).toBe('missing_signature');
    expect(reason(() => verifyGeregeSignature(RAW, { 'gerege-signature': 'sha256=abc' }, opts()))).toBe('missing_signature');
    expect(reason(() => verifyGeregeSignature(RAW, { 'gerege-signature': `t=${T}` }, opts()))).toBe('missing_signature');
    expect(reason(() => verifyGeregeSignature(RAW, { 'gerege-signature': `t=${T},v1=zz` }, opts()))).toBe('missing_signature');
  });

  it('reads the header whatever its case', () => {
    expect(verifyGeregeSignature(RAW, { 'Gerege-Signature': signGeregeTestPayload(RAW, SECRET, T) }, opts()).secretIndex).toBe(0);
  });

  it('refuses to verify with no secret configured', () => {
    expect(reason(() => verifyGeregeSignature(RAW, headers(signGeregeTestPayload(RAW, SECRET, T)), opts({ secrets: [] })))).toBe(
      'no_secrets',
    );
  });
});

describe('Gerege webhook events', () => {
  const verify = (raw: Buffer, extra: Record<string, string> = {}) =>
    verifyGeregeWebhook(raw, headers(signGeregeTestPayload(raw, SECRET, T), extra), opts());

  it('a payment intent event yields its id, type, intent id, livemode and time', () => {
    expect(verify(RAW)).toEqual({
      secretIndex: 0,
      event: { eventId: 'evt_1', type: 'payment_intent.succeeded', objectId: 'pi_42', livemode: false, createdAt: (T - 5) * 1_000 },
    });
  });

  it('a refund event points at its payment intent', () => {
    const raw = Buffer.from(
      JSON.stringify({
        ...event,
        id: 'evt_2',
        type: 'refund.succeeded',
        data: { object: { id: 're_9', object: 'refund', payment_intent: 'pi_42', status: 'succeeded' } },
      }),
    );
    expect(verify(raw, { 'gerege-event-id': 'evt_2' }).event).toMatchObject({ eventId: 'evt_2', objectId: 'pi_42' });
  });

  it('an object we do not track has no object id', () => {
    const raw = Buffer.from(JSON.stringify({ ...event, id: 'evt_3', type: 'settlement.paid', data: { object: { id: 'st_1' } } }));
    expect(verify(raw, { 'gerege-event-id': 'evt_3' }).event.objectId).toBeNull();
  });

  it('rejects an event id header that differs from the signed body', () => {
    expect(() => verify(RAW, { 'gerege-event-id': 'evt_other' })).toThrow(/differs from the body id/);
  });

  it('rejects a signed body that is not JSON or not an event', () => {
    expect(reason(() => verify(Buffer.from('{"id":"evt_1",')))).toBe('malformed_body');
    expect(reason(() => verify(Buffer.from('{"hello":"world"}')))).toBe('malformed_body');
  });
});
