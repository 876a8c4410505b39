import { describe, expect, it } from 'vitest';
import {
  billIdSuffixOf,
  infoAnswerSchema,
  parsePosDate,
  receiptBody,
  refusalOf,
  type ReceiptIdentity,
} from '../../src/fiscal/ebarimt/wire.js';
import type { ReceiptRequest } from '../../src/fiscal/types.js';

const IDENTITY: ReceiptIdentity = {
  merchantTin: '10000000001',
  posNo: '1',
  branchNo: '001',
  districtCode: '2501',
  registration: { vatPayer: true, cityTax: true },
  paymentCode: 'BANK_TRANSFER',
  defaultUnit: 'ш',
  defaultClassificationCode: null,
};

function request(lines: ReceiptRequest['lines'], total?: number): ReceiptRequest {
  return {
    key: 'rcpt-1',
    orderId: 'ord-1',
    saleDate: '2026-12-02',
    soldAt: 0,
    total: total ?? lines.reduce((s, l) => s + l.quantity * l.unitPrice, 0),
    currency: 'MNT',
    lines,
    payment: { provider: 'qutpay', invoiceId: 'inv-1' },
  };
}

const item = (unitPrice: number, quantity = 1) => ({ name: 'Item', classificationCode: '2441100', unit: null, quantity, unitPrice });

describe('eBarimt wire format', () => {
  it('derives a 10-digit billIdSuffix from the key: the same key always, another key another suffix', () => {
    expect(billIdSuffixOf('rcpt-1')).toMatch(/^\d{10}$/);
    expect(billIdSuffixOf('rcpt-1')).toBe(billIdSuffixOf('rcpt-1'));
    const suffixes = new Set(Array.from({ length: 1000 }, (_, i) => billIdSuffixOf(`rcpt-${i}`)));
    expect(suffixes.size).toBe(1000);
  });

  it('puts 250 VAT and 50 city tax in a 2,800 item, its sub-receipt and the receipt', () => {
    const built = receiptBody(request([item(2800)]), IDENTITY);
    if (!('body' in built)) throw new Error(built.problems.join());
    const body = built.body as any;
    expect(body).toMatchObject({
      totalAmount: 2800,
      totalVAT: 250,
      totalCityTax: 50,
      type: 'B2C_RECEIPT',
      billIdSuffix: billIdSuffixOf('rcpt-1'),
    });
    expect(body.receipts[0]).toMatchObject({ totalAmount: 2800, totalVAT: 250, totalCityTax: 50, taxType: 'VAT_ABLE' });
    expect(body.receipts[0].items[0]).toMatchObject({
      qty: 1,
      unitPrice: 2800,
      totalAmount: 2800,
      totalVAT: 250,
      totalCityTax: 50,
      measureUnit: 'ш',
    });
    expect(body.payments).toEqual([{ code: 'BANK_TRANSFER', exchangeCode: 'qutpay', status: 'PAID', paidAmount: 2800, data: null }]);
  });

  it('splits in hundredths: 1,000 carries 89.29 VAT and 17.86 city tax, and the receipt sums its items', () => {
    const built = receiptBody(request([item(1000), item(1000, 2)]), IDENTITY);
    if (!('body' in built)) throw new Error(built.problems.join());
    const body = built.body as any;
    expect(body.receipts[0].items.map((i: any) => [i.totalVAT, i.totalCityTax])).toEqual([
      [89.29, 17.86],
      [178.57, 35.71],
    ]);
    expect(body.totalVAT).toBe(267.86);
    expect(body.totalCityTax).toBe(53.57);
  });

  it('refuses a sale it cannot send: no classification code, a total that is not the sum, no lines', () => {
    const noCode = receiptBody(request([{ ...item(500), classificationCode: null }]), IDENTITY);
    expect('problems' in noCode && noCode.problems.join()).toContain('7-digit classification code');
    expect(
      receiptBody(request([{ ...item(500), classificationCode: null }]), { ...IDENTITY, defaultClassificationCode: '2441100' }),
    ).toHaveProperty('body');
    const wrongTotal = receiptBody(request([item(500)], 600), IDENTITY);
    expect('problems' in wrongTotal && wrongTotal.problems.join()).toContain('not the sum of the lines');
    expect(receiptBody(request([]), IDENTITY)).toHaveProperty('problems');
  });

  it("reads PosAPI's refusals and dates", () => {
    expect(refusalOf({ status: 'ERROR', message: 'bad' })).toEqual({ status: 'ERROR', message: 'bad' });
    expect(refusalOf({ status: 'SUCCESS' })).toBeNull();
    expect(refusalOf('text')).toBeNull();
    expect(parsePosDate('2026-12-02 08:00:00', 480)).toBe(Date.UTC(2026, 11, 2, 0, 0, 0));
    expect(parsePosDate('', 480)).toBeNull();
    expect(parsePosDate('yesterday', 480)).toBeNull();
  });
});

describe('PosAPI /rest/info', () => {
  it('is read whether numbers come as numbers or strings', () => {
    const parsed = infoAnswerSchema.parse({
      posNo: 10020030,
      leftLotteries: '12',
      merchants: [{ tin: 10000000001, name: 'X', customers: [] }],
    });
    expect(parsed).toMatchObject({ posNo: '10020030', leftLotteries: 12, merchants: [{ tin: '10000000001' }] });
    expect(infoAnswerSchema.parse({ leftLotteries: '' }).leftLotteries).toBeNull();
  });
});
