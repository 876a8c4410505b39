import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { refusalReason } from './fake-provider-server.js';
import { signQutpayTestPayload, verifyQutpaySignature, verifyQutpayWebhook } from '../../src/payments/qutpay/index.js';

const SECRET = 'qp_whsec_current';
const OLD = 'qp_whsec_previous';
const body = { event: 'invoice.paid', invoice: { id: 'inv_7', status: 'paid', amount: 2500, externalOrderId: 'vm-1-7', livemode: false } };
const RAW = Buffer.from(JSON.stringify(body));

const reason = refusalReason;

describe('QutPay webhook signatures', () => {
  it('accepts what signQutpayTestPayload signs: sha256=<hex HMAC of the raw body>', () => {
    const signature = signQutpayTestPayload(RAW, SECRET);
    expect(signature).toBe(`sha256=${createHmac('sha256', SECRET).update(RAW).digest('hex')}`);
    expect(verifyQutpaySignature(RAW, { 'x-qutpay-signature': signature }, { secrets: [SECRET] })).toEqual({ secretIndex: 0 });
  });

  it('rejects a tampered body', () => {
    const signature = signQutpayTestPayload(RAW, SECRET);
    const tampered = Buffer.from(RAW.toString().replace('2500', '2501'));
    expect(reason(() => verifyQutpaySignature(tampered, { 'x-qutpay-signature': signature }, { secrets: [SECRET] }))).toBe('bad_signature');
  });

  it('during rotation accepts either secret and reports which', () => {
    const secrets = [SECRET, OLD];
    expect(verifyQutpaySignature(RAW, { 'x-qutpay-signature': signQutpayTestPayload(RAW, OLD) }, { secrets }).secretIndex).toBe(1);
    expect(reason(() => verifyQutpaySignature(RAW, { 'x-qutpay-signature': signQutpayTestPayload(RAW, 'other') }, { secrets }))).toBe(
      'bad_signature',
    );
  });

  it('accepts a repeated header when one value matches', () => {
    const headers = { 'x-qutpay-signature': [signQutpayTestPayload(RAW, 'other'), signQutpayTestPayload(RAW, SECRET)] };
    expect(verifyQutpaySignature(RAW, headers, { secrets: [SECRET] }).secretIndex).toBe(0);
  });

  it('rejects a missing or shapeless header, with no secrets, or a parsed body, each with its reason', () => {
    expect(reason(() => verifyQutpaySignature(RAW, {}, { secrets: [SECRET] }))).toBe('missing_signature');
    expect(reason(() => verifyQutpaySignature(RAW, { 'x-qutpay-signature': 'abc' }, { secrets: [SECRET] }))).toBe('missing_signature');
    expect(reason(() => verifyQutpaySignature(RAW, { 'x-qutpay-signature': signQutpayTestPayload(RAW, SECRET) }, { secrets: [] }))).toBe(
      'no_secrets',
    );
    expect(() => verifyQutpaySignature(body as unknown as Buffer, { 'x-qutpay-signature': 'sha256=00' }, { secrets: [SECRET] })).toThrow(
      /was the body parsed before verification\?/,
    );
  });

  it('the event id is <invoice.id>:<status>, so each status of one invoice is handled once', () => {
    const { event, secretIndex } = verifyQutpayWebhook(
      RAW,
      { 'X-Qutpay-Signature': signQutpayTestPayload(RAW, SECRET) },
      { secrets: [SECRET] },
    );
    expect(secretIndex).toBe(0);
    expect(event).toEqual({
      eventId: 'inv_7:paid',
      type: 'invoice.paid',
      objectId: 'inv_7',
      livemode: false,
      createdAt: null,
      reference: 'vm-1-7',
    });
  });

  it('rejects a signed body without an invoice id and status', () => {
    const raw = Buffer.from(JSON.stringify({ event: 'invoice.paid', invoice: { id: 'inv_7' } }));
    expect(
      reason(() => verifyQutpayWebhook(raw, { 'x-qutpay-signature': signQutpayTestPayload(raw, SECRET) }, { secrets: [SECRET] })),
    ).toBe('malformed_body');
  });
});
