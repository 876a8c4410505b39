import { describe, expect, it } from 'vitest';
import { checkBody, externalCheckNumberOf, firstError, type CheckIdentity } from '../../src/fiscal/webkassa/wire.js';
import type { ReceiptRequest } from '../../src/fiscal/types.js';

const IDENTITY: CheckIdentity = { cashboxUniqueNumber: 'SWK1', vatPayer: true, vatPercent: 16, paymentType: 4, unitCode: 796 };

const request = (lines: ReceiptRequest['lines'], total: number): ReceiptRequest => ({
  key: 'k',
  orderId: 'ord-1',
  saleDate: '2026-12-02',
  soldAt: 0,
  total,
  currency: 'KZT',
  lines,
  payment: { provider: 'qutpay', invoiceId: 'inv-1' },
});

describe('Webkassa wire format', () => {
  it('keeps a key of up to 50 characters as the ExternalCheckNumber and digests a longer one stably', () => {
    expect(externalCheckNumberOf('a'.repeat(50))).toBe('a'.repeat(50));
    const long = externalCheckNumberOf('b'.repeat(51));
    expect(long).toHaveLength(43);
    expect(long).toBe(externalCheckNumberOf('b'.repeat(51)));
    expect(long).not.toBe(externalCheckNumberOf('c'.repeat(51)));
  });

  it('puts 16 % VAT inside each position, in hundredths, and one payment of the total', () => {
    const built = checkBody(
      request([{ name: 'Cola', classificationCode: null, unit: null, quantity: 2, unitPrice: 1000 }], 2000),
      IDENTITY,
      2,
      'k',
    );
    if (!('body' in built)) throw new Error(built.problems.join());
    expect(built.body).toMatchObject({
      OperationType: 2,
      ExternalCheckNumber: 'k',
      Positions: [{ Count: 2, Price: 1000, TaxPercent: 16, Tax: 275.86, TaxType: 100, UnitCode: 796 }],
      Payments: [{ Sum: 2000, PaymentType: 4 }],
      Change: 0,
    });
  });

  it('sends no VAT for an organisation that does not pay it, and a numeric unit as its UnitCode', () => {
    const built = checkBody(
      request([{ name: 'Gum', classificationCode: null, unit: '166', quantity: 1, unitPrice: 500 }], 500),
      { ...IDENTITY, vatPayer: false },
      2,
      'k',
    );
    expect('body' in built && built.body.Positions).toEqual([
      expect.objectContaining({ Tax: 0, TaxType: 0, TaxPercent: 0, UnitCode: 166 }),
    ]);
  });

  it('refuses a total that is not the sum of the lines', () => {
    const built = checkBody(
      request([{ name: 'Gum', classificationCode: null, unit: null, quantity: 1, unitPrice: 500 }], 400),
      IDENTITY,
      2,
      'k',
    );
    expect('problems' in built && built.problems.join()).toContain('not the sum of the lines');
  });

  it("reads Webkassa's first error", () => {
    expect(firstError({ Errors: [{ Code: 14, Text: 'dup' }], Data: {} })).toEqual({ code: 14, text: 'dup' });
    expect(firstError({ Data: {} })).toBeNull();
    expect(firstError('nope')).toBeNull();
  });
});
