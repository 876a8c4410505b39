import { describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.js';
import { receiptBody, type ReceiptIdentity } from '../../src/fiscal/ebarimt/wire.js';
import { startSimulator } from './harness.js';
import { callJson } from '../helpers/json-http.js';

/**
 * The simulator is PosAPI's stand-in: it must take what the real daemon takes, or the adapter is
 * tested against rules nobody enforces and the simulator hides what the daemon does. The receipt
 * below is shaped as an independent PosAPI 3 client builds it from the official manual's B2C
 * example (docs/receipts.md lists the sources): a one-digit branch, no billIdSuffix (the daemon
 * numbers the receipt), a wallet payment code, the manual's optional fields present and empty.
 * What the daemon refuses stays refused: wrong tax sums, a suffix used twice in a day, a second return.
 */
const TIN = '10000000001';

const send = (sim: Simulator, method: string, path: string, body?: unknown) => callJson(`${sim.url}${path}`, method, body);

/** 5,600 = 5,000 net + 500 VAT + 100 city tax, paid by a QPay bank transfer. */
function independentReceipt(overrides: Record<string, unknown> = {}, item: Record<string, unknown> = {}) {
  const line = {
    name: 'Талх',
    barCode: '19059010880001',
    barCodeType: 'GS1',
    classificationCode: '2349010',
    taxProductCode: null,
    measureUnit: 'ш',
    qty: 1,
    unitPrice: 5600,
    totalVAT: 500,
    totalCityTax: 100,
    totalAmount: 5600,
    ...item,
  };
  return {
    branchNo: '1',
    totalAmount: 5600,
    totalVAT: line.totalVAT,
    totalCityTax: line.totalCityTax,
    districtCode: '2501',
    merchantTin: TIN,
    posNo: '1',
    customerTin: null,
    consumerNo: '',
    type: 'B2C_RECEIPT',
    inactiveId: null,
    reportMonth: null,
    receipts: [
      {
        totalAmount: 5600,
        taxType: 'VAT_ABLE',
        merchantTin: TIN,
        customerTin: null,
        totalVAT: line.totalVAT,
        totalCityTax: line.totalCityTax,
        bankAccountNo: '',
        invoiceId: null,
        iBan: '',
        items: [line],
      },
    ],
    payments: [{ code: 'BANK_TRANSFER_QPAY', exchangeCode: 'qpay', status: 'PAID', paidAmount: 5600, data: null }],
    ...overrides,
  };
}

describe('simulated PosAPI and an independent client', () => {
  it("files the independent client's receipt: one-digit branch, no billIdSuffix, a wallet payment code", async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const first = await send(sim, 'POST', '/rest/receipt', independentReceipt());
    expect(first.json.message ?? '').toBe('');
    expect(first).toMatchObject({ status: 200, json: { status: 'SUCCESS', id: expect.stringMatching(/^\d{33}$/) } });
    // Without a suffix nothing is "used today": the next receipt is no duplicate.
    const second = await send(sim, 'POST', '/rest/receipt', independentReceipt({ billIdSuffix: '' }));
    expect(second.json.status).toBe('SUCCESS');
    const card = await send(
      sim,
      'POST',
      '/rest/receipt',
      independentReceipt({ branchNo: '012', payments: [{ code: 'PAYMENT_CARD', status: 'PAID', paidAmount: 5600 }] }),
    );
    expect(card.json.status).toBe('SUCCESS');
    expect(sim.registers.ebarimt.records().receipts).toHaveLength(3);
  });

  it('still refuses what the daemon refuses: wrong tax sums, a suffix used twice today, a second return', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const wrongVat = await send(sim, 'POST', '/rest/receipt', independentReceipt({ totalVAT: 400 }, { totalVAT: 400 }));
    expect(wrongVat).toMatchObject({ status: 400, json: { status: 'ERROR' } });
    expect(wrongVat.json.message).toContain('totalVAT');
    const unsummed = await send(sim, 'POST', '/rest/receipt', independentReceipt({ totalCityTax: 90 }));
    expect(unsummed.json.message).toContain('must be the sums of the sub-receipts');

    const once = await send(sim, 'POST', '/rest/receipt', independentReceipt({ billIdSuffix: '07' }));
    expect(once.json.status).toBe('SUCCESS');
    const twice = await send(sim, 'POST', '/rest/receipt', independentReceipt({ billIdSuffix: '07' }));
    expect(twice).toMatchObject({ status: 400, json: { status: 'ERROR' } });
    expect(twice.json.message).toContain('billIdSuffix 07 was already used today');

    expect((await send(sim, 'DELETE', '/rest/receipt', { id: once.json.id, date: once.json.date })).status).toBe(200);
    const again = await send(sim, 'DELETE', '/rest/receipt', { id: once.json.id, date: once.json.date });
    expect(again).toMatchObject({ status: 400, json: { status: 'ERROR' } });
    expect(again.json.message).toContain('already returned');
    expect(sim.registers.ebarimt.records().receipts).toHaveLength(1);
  });

  it("takes our adapter's receipt, spelled as deployed clients spell it (totalVAT at every level)", async () => {
    const identity: ReceiptIdentity = {
      merchantTin: TIN,
      posNo: '1',
      branchNo: '1',
      districtCode: '2501',
      registration: { vatPayer: true, cityTax: true },
      paymentCode: 'BANK_TRANSFER_QPAY',
      defaultUnit: 'ш',
      defaultClassificationCode: null,
    };
    const built = receiptBody(
      {
        key: 'rcpt-independent',
        orderId: 'ord-1',
        saleDate: '2026-12-02',
        soldAt: 0,
        total: 5600,
        currency: 'MNT',
        lines: [{ name: 'Талх', classificationCode: '2349010', unit: null, quantity: 1, unitPrice: 5600 }],
        payment: { provider: 'qpay', invoiceId: 'inv-1' },
      },
      identity,
    );
    if (!('body' in built)) throw new Error(built.problems.join('; '));
    const text = JSON.stringify(built.body);
    expect(text.match(/"totalVAT":/g)).toHaveLength(3);
    expect(text).not.toMatch(/"totalVat":|"vat":/);
    const sim = await startSimulator({ provider: 'qutpay' });
    expect((await send(sim, 'POST', '/rest/receipt', built.body)).json).toMatchObject({ status: 'SUCCESS' });
  });
});
