import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/util/index.js';
import type { Simulator } from '../../src/simulator/index.js';
import { startSimulator } from './harness.js';
import { callJson, jsonAnswer } from '../helpers/json-http.js';

const TIN = '10000000001';

const send = (sim: Simulator, method: string, path: string, body?: unknown) => callJson(`${sim.url}${path}`, method, body);

/** A valid B2C receipt of one 2,800 item: 250 VAT, 50 city tax. */
function receipt(overrides: Record<string, unknown> = {}, item: Record<string, unknown> = {}) {
  const line = {
    name: 'Cola',
    measureUnit: 'ш',
    qty: 1,
    unitPrice: 2800,
    totalAmount: 2800,
    totalVAT: 250,
    totalCityTax: 50,
    classificationCode: '2441100',
    ...item,
  };
  return {
    branchNo: '001',
    totalAmount: line.totalAmount,
    totalVAT: line.totalVAT,
    totalCityTax: line.totalCityTax,
    districtCode: '2501',
    merchantTin: TIN,
    posNo: '10020030',
    type: 'B2C_RECEIPT',
    billIdSuffix: `s${Math.random().toString().slice(2, 12)}`,
    receipts: [
      {
        totalAmount: line.totalAmount,
        taxType: 'VAT_ABLE',
        merchantTin: TIN,
        totalVAT: line.totalVAT,
        totalCityTax: line.totalCityTax,
        items: [line],
      },
    ],
    payments: [{ code: 'BANK_TRANSFER', status: 'PAID', paidAmount: line.totalAmount }],
    ...overrides,
  };
}

const held = (sim: Simulator) => sim.registers.ebarimt.records().receipts;

describe('simulated eBarimt PosAPI', () => {
  it('files a valid receipt: SUCCESS, a 33-digit id, a lottery number, QR data and the date', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const { status, json } = await send(sim, 'POST', '/rest/receipt', receipt());
    expect(status).toBe(200);
    expect(json).toMatchObject({
      status: 'SUCCESS',
      id: expect.stringMatching(/^\d{33}$/),
      lottery: expect.stringMatching(/\S/),
      qrData: expect.any(String),
    });
    expect(json.date).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(held(sim)).toHaveLength(1);
  });

  it.each([
    ['a wrong VAT', receipt({ totalVAT: 200 }, { totalVAT: 200 }), 'totalVAT: VAT is not 10 % of the net amount: expected 250.00'],
    ['a wrong city tax', receipt({}, { totalCityTax: 20 }), 'totalCityTax: city tax is not 2 %'],
    [
      'sub-receipt totals that are not the sums of the items',
      (() => {
        const body = receipt();
        body.receipts[0]!.totalAmount = 3000;
        return body;
      })(),
      'must be the sums of its items',
    ],
    [
      'payments that do not sum to the total',
      receipt({ payments: [{ code: 'CASH', status: 'PAID', paidAmount: 2000 }] }),
      'paidAmount must sum to totalAmount 2800.00',
    ],
    ['no payments', receipt({ payments: [] }), 'payments: at least one payment is required'],
    ['a 3-digit district', receipt({ districtCode: '251' }), 'districtCode: must be 4 digits'],
    ['a 6-digit classification code', receipt({}, { classificationCode: '244110' }), 'classificationCode: must be 7 digits'],
    ['an unknown merchant', receipt({ merchantTin: '99999999999' }), 'not registered in this PosAPI'],
    ['a billIdSuffix that is not a string', receipt({ billIdSuffix: 42 }), 'billIdSuffix: must be a string when given'],
    ['a 4-digit branch', receipt({ branchNo: '0001' }), 'branchNo: must be 1 to 3 digits'],
    [
      'a payment code that is no code',
      receipt({ payments: [{ code: 'bank transfer', status: 'PAID', paidAmount: 2800 }] }),
      'code: must be an upper-case payment code',
    ],
    ['a B2C receipt with a customer TIN', receipt({ customerTin: '12345678901' }), 'customerTin: only for B2B'],
    [
      'an amount with three decimals',
      receipt({ totalAmount: 2800.001 }),
      'totalAmount: must be a non-negative number with at most 2 decimals',
    ],
    ['qty × unitPrice not the total', receipt({}, { qty: 2 }), 'must be qty × unitPrice'],
  ])('refuses %s with an ERROR naming the problem and files nothing', async (_what, body, message) => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const { status, json } = await send(sim, 'POST', '/rest/receipt', body);
    expect(status).toBe(400);
    expect(json.status).toBe('ERROR');
    if (message) expect(json.message).toContain(message);
    expect(held(sim)).toHaveLength(0);
  });

  it('answers malformed JSON and a non-object in its own shape', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const truncated = await fetch(`${sim.url}/rest/receipt`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"totalAmount":',
    });
    expect(await jsonAnswer(truncated)).toMatchObject({
      status: 400,
      json: { status: 'ERROR' },
    });
    expect(await send(sim, 'POST', '/rest/receipt', [1, 2])).toMatchObject({
      status: 400,
      json: { status: 'ERROR', message: 'the body must be a JSON object' },
    });
  });

  it('takes no VAT from a merchant that is not a VAT payer, and no city tax from one outside the capital', async () => {
    const sim = await startSimulator({
      provider: 'qutpay',
      ebarimt: { merchants: [{ tin: TIN, name: 'X', vatPayer: false, cityTax: false }] },
    });
    expect((await send(sim, 'POST', '/rest/receipt', receipt())).json.message).toMatch(/none is due/);
    const plain = receipt({ totalVAT: 0, totalCityTax: 0 }, { totalVAT: 0, totalCityTax: 0 });
    expect((await send(sim, 'POST', '/rest/receipt', plain)).status).toBe(200);
  });

  it('keeps a billIdSuffix unique within the day: the same suffix is refused today and taken again tomorrow', async () => {
    const clock = createManualClock(Date.UTC(2026, 11, 2, 3, 0, 0));
    const sim = await startSimulator({ provider: 'qutpay', clock });
    const body = receipt({ billIdSuffix: '0000000042' });
    expect((await send(sim, 'POST', '/rest/receipt', body)).status).toBe(200);
    const again = await send(sim, 'POST', '/rest/receipt', body);
    expect(again).toMatchObject({ status: 400, json: { status: 'ERROR' } });
    expect(again.json.message).toContain('billIdSuffix 0000000042 was already used today');
    clock.advance(24 * 3600_000);
    expect((await send(sim, 'POST', '/rest/receipt', body)).status).toBe(200);
    expect(held(sim)).toHaveLength(2);
  });

  it('refuses everything before activation and its info names no merchant', async () => {
    const sim = await startSimulator({ provider: 'qutpay', ebarimt: { activated: false } });
    expect(await send(sim, 'POST', '/rest/receipt', receipt())).toMatchObject({
      status: 400,
      json: { message: expect.stringContaining('not activated') },
    });
    expect((await send(sim, 'GET', '/rest/info')).json).toMatchObject({ posNo: '', merchants: [] });
    expect((await send(sim, 'POST', '/__sim/ebarimt/state', { activated: true })).json.activated).toBe(true);
    expect((await send(sim, 'POST', '/rest/receipt', receipt())).status).toBe(200);
  });

  it('gives lottery numbers until they run out, and none while the queue has not been sent for 72 hours', async () => {
    const clock = createManualClock();
    const sim = await startSimulator({ provider: 'qutpay', clock, ebarimt: { lotteries: 1 } });
    expect((await send(sim, 'POST', '/rest/receipt', receipt())).json.lottery).not.toBe('');
    expect((await send(sim, 'POST', '/rest/receipt', receipt())).json.lottery).toBe('');
    expect((await send(sim, 'GET', '/rest/info')).json.leftLotteries).toBe(0);
    await send(sim, 'POST', '/__sim/ebarimt/state', { lotteries: 5, taxSystemReachable: false });
    clock.advance(73 * 3600_000);
    expect((await send(sim, 'POST', '/rest/receipt', receipt())).json.lottery).toBe('');
  });

  it('queues receipts while the tax system is unreachable; sendData sends them and sets the last send time', async () => {
    const clock = createManualClock();
    const sim = await startSimulator({ provider: 'qutpay', clock, ebarimt: { taxSystemReachable: false } });
    await send(sim, 'POST', '/rest/receipt', receipt());
    expect((await send(sim, 'GET', '/rest/info')).json.lastSentDate).toBe('');
    expect(await send(sim, 'GET', '/rest/sendData')).toMatchObject({ status: 503, json: { status: 'ERROR' } });
    await send(sim, 'POST', '/__sim/ebarimt/state', { taxSystemReachable: true });
    expect(await send(sim, 'GET', '/rest/sendData')).toEqual({ status: 200, json: {} });
    expect(sim.registers.ebarimt.state()).toMatchObject({ queued: 0 });
    expect((await send(sim, 'GET', '/rest/info')).json.lastSentDate).toBe(sim.registers.ebarimt.daemon.localDate(clock.now()));
  });

  it('returns a receipt named by id and printed date, once; refuses a missing body, a wrong date and an unknown id', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const { json } = await send(sim, 'POST', '/rest/receipt', receipt());
    expect((await send(sim, 'DELETE', '/rest/receipt')).json.message).toContain('id: required');
    expect((await send(sim, 'DELETE', '/rest/receipt', { id: json.id, date: '2020-01-01 00:00:00' })).json.message).toContain(
      'is not the date',
    );
    expect((await send(sim, 'DELETE', '/rest/receipt', { id: '1'.repeat(33), date: json.date })).json.message).toContain('not found');
    expect(held(sim)[0]!.status).toBe('active');
    expect((await send(sim, 'DELETE', '/rest/receipt', { id: json.id, date: json.date })).status).toBe(200);
    expect((await send(sim, 'DELETE', '/rest/receipt', { id: json.id, date: json.date })).json.message).toContain('already returned');
  });

  it('corrects a receipt with inactiveId: the new one carries no lottery and the old one is corrected', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const first = (await send(sim, 'POST', '/rest/receipt', receipt())).json;
    const correction = await send(sim, 'POST', '/rest/receipt', receipt({ inactiveId: first.id }));
    expect(correction.json.lottery).toBe('');
    expect(held(sim).map((r) => r.status)).toEqual(['corrected', 'active']);
    expect((await send(sim, 'POST', '/rest/receipt', receipt({ inactiveId: first.id }))).json.message).toContain('no active receipt');
  });

  it('admin: bad faults and bad state are refused naming every problem and change nothing; provider faults never touch it', async () => {
    const sim = await startSimulator({ provider: 'qutpay', faults: { serverError: 1 } });
    const bad = await send(sim, 'POST', '/__sim/ebarimt/faults', { outage: 'yes', lostAfterCommit: 2, nonsense: 1 });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(
      /outage: must be true or false.*lostAfterCommit: must be a probability.*nonsense: unknown register fault/,
    );
    expect((await send(sim, 'GET', '/__sim/ebarimt/faults')).json).toMatchObject({ outage: false, lostAfterCommit: 0 });
    const badState = await send(sim, 'POST', '/__sim/ebarimt/state', { activated: 'no', lotteries: -1, colour: 'red' });
    expect(badState.status).toBe(400);
    expect(sim.registers.ebarimt.state()).toMatchObject({ activated: true, lotteries: 1000 });
    expect((await send(sim, 'POST', '/rest/receipt', receipt())).status).toBe(200);
  });

  it('faults: lostAfterCommit files the receipt and drops the answer; outage answers 503 and files nothing', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    await send(sim, 'POST', '/__sim/ebarimt/faults', { lostAfterCommit: 1 });
    await expect(send(sim, 'POST', '/rest/receipt', receipt())).rejects.toThrow();
    expect(held(sim)).toHaveLength(1);
    await send(sim, 'POST', '/__sim/ebarimt/faults', { lostAfterCommit: 0, outage: true });
    expect(await send(sim, 'POST', '/rest/receipt', receipt())).toMatchObject({ status: 503, json: { status: 'ERROR' } });
    expect(held(sim)).toHaveLength(1);
    expect(sim.registers.ebarimt.records().calls.map((c) => c.status)).toEqual(['lost', 503]);
  });
});
