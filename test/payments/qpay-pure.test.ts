import { describe, expect, it } from 'vitest';
import { senderInvoiceNo } from '../../src/payments/adapters.js';
import { expiryOf } from '../../src/payments/qpay/token.js';
import { decideQpayRefund } from '../../src/payments/qpay/refund.js';
import { callbackUrlFor, qpayCallbackTarget, verifyQpayCallback } from '../../src/payments/qpay/callback.js';
import { mapQpayInvoiceStatus, mapQpayPaymentStatus } from '../../src/payments/qpay/status.js';

describe('QPay, the pure parts', () => {
  it('sender_invoice_no: the key when it fits 45 safe characters, else a digest; one number per key', () => {
    expect(senderInvoiceNo('vm-001-db1-12-pay')).toBe('vm-001-db1-12-pay');
    const long = `${'vending-machine-at-the-long-named-station'}-0a1b2c3d-12-deadbeef-pay`;
    const number = senderInvoiceNo(long);
    expect(number).toMatch(/^vg-[0-9a-f]{40}$/);
    expect(number.length).toBeLessThanOrEqual(45);
    expect(senderInvoiceNo(long)).toBe(number);
    expect(senderInvoiceNo(`${long}-2`)).not.toBe(number);
    expect(senderInvoiceNo('has space-pay')).toMatch(/^vg-/);
  });

  it('expires_in: a Unix time or a lifetime, whichever it is', () => {
    const now = Date.UTC(2026, 11, 4);
    expect(expiryOf(3600, now)).toBe(now + 3_600_000);
    expect(expiryOf(Math.floor(now / 1000) + 3600, now)).toBe(now + 3_600_000);
  });

  it('an unknown word is never money; PARTIAL and REFUNDED are', () => {
    expect(mapQpayPaymentStatus('PAID')).toBe('paid');
    expect(mapQpayPaymentStatus('PARTIAL')).toBe('partially_refunded');
    expect(mapQpayPaymentStatus('REFUNDED')).toBe('refunded');
    expect(mapQpayPaymentStatus('NEW')).toBe('pending');
    expect(mapQpayPaymentStatus('SETTLED')).toBeUndefined();
    expect(mapQpayInvoiceStatus('CANCELED')).toBe('canceled');
    expect(mapQpayInvoiceStatus('CLOSED')).toBeUndefined();
  });

  it('a refund is planned from the rows: the payment of that amount, already refunded, or refused', () => {
    const rows = (list: [string, string, number][]) => ({
      count: list.length,
      rows: list.map(([payment_id, payment_status, payment_amount]) => ({ payment_id, payment_status, payment_amount })),
    });
    const request = { invoiceId: 'i1', amount: 1500, idempotencyKey: 'k' };
    expect(decideQpayRefund(request, rows([['p1', 'PAID', 1500]]))).toEqual({ kind: 'send', paymentId: 'p1' });
    expect(decideQpayRefund(request, rows([['p1', 'REFUNDED', 1500]]))).toMatchObject({ kind: 'done', result: { status: 'succeeded' } });
    expect(decideQpayRefund({ ...request, amount: 500 }, rows([['p1', 'PAID', 1500]]))).toMatchObject({
      kind: 'done',
      result: { status: 'failed', detail: expect.stringMatching(/whole payments/) },
    });
    expect(decideQpayRefund(request, rows([['p1', 'FAILED', 1500]]))).toMatchObject({ kind: 'done', result: { status: 'failed' } });
  });

  it('the callback URL names the order, and the relay-side reading finds it there', () => {
    const url = callbackUrlFor('https://pay-vm-1.example.com/webhooks/qpay', 'vm-1-ab12cd-3-0badf00d');
    expect(url).toBe('https://pay-vm-1.example.com/webhooks/qpay?ref=vm-1-ab12cd-3-0badf00d');
    const body = verifyQpayCallback(Buffer.alloc(0), { 'x-vendgate-callback-query': new URL(url).search.slice(1) });
    expect(qpayCallbackTarget(body)).toEqual({ kind: 'reference', reference: 'vm-1-ab12cd-3-0badf00d', invoiceId: null });
    expect(() => verifyQpayCallback(Buffer.alloc(0), {})).toThrow(/query string/);
    expect(qpayCallbackTarget({})).toMatchObject({ kind: 'none' });
  });
});
