import { describe, expect, it } from 'vitest';
import { billIdSuffixOf, type EbarimtOptions } from '../../../src/fiscal/ebarimt/index.js';
import type { Simulator } from '../../../src/simulator/index.js';
import { captureLogger } from '../../hardware/fakes/capture-logger.js';
import { closedPortUrl, saleRequest, simEbarimtRegister, startRegisters } from './register-harness.js';

const MERCHANT = { tin: '10000000001', name: 'SIM VENDING LLC', vatPayer: true, cityTax: true };

function register(url: string, overrides: Partial<EbarimtOptions> = {}) {
  const capture = captureLogger();
  const adapter = simEbarimtRegister(url, { merchantTin: MERCHANT.tin, logger: capture.logger, ...overrides });
  return { adapter, logs: capture.entries };
}

const held = (sim: Simulator) => sim.registers.ebarimt.records().receipts;

describe('eBarimt PosAPI adapter against the simulated PosAPI', () => {
  it('issues a B2C receipt: 2,800 is filed with 250 VAT and 50 city tax, and answers a 33-digit id, a lottery number and QR data', async () => {
    const sim = await startRegisters({ ebarimt: { merchants: [MERCHANT] } });
    const { adapter } = register(sim.url);
    const request = saleRequest();
    const outcome = await adapter.issue(request);
    expect(outcome.kind).toBe('issued');
    if (outcome.kind !== 'issued') return;
    expect(outcome.receipt.registerId).toMatch(/^\d{33}$/);
    expect(outcome.receipt.registerDate).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(outcome.receipt.lottery).not.toBeNull();
    expect(outcome.receipt.qrData).toBeTruthy();
    const [receipt] = held(sim);
    expect(receipt).toMatchObject({
      billIdSuffix: billIdSuffixOf(request.key),
      totalCents: 280_000,
      vatCents: 25_000,
      cityTaxCents: 5_000,
    });
  });

  it('splits several lines and amounts with fractions of a tögrög so that PosAPI accepts the 0.01 check of every item', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url);
    const request = saleRequest({
      lines: [
        { name: 'Water', classificationCode: '2441100', unit: 'ш', quantity: 2, unitPrice: 1000 },
        { name: 'Chips', classificationCode: '2349010', unit: null, quantity: 1, unitPrice: 1550 },
      ],
    });
    expect((await adapter.issue(request)).kind).toBe('issued');
    const [receipt] = held(sim);
    expect(receipt!.totalCents).toBe(355_000);
    // A one-digit branch number is PosAPI's "001".
    expect((await register(sim.url, { branchNo: '1' }).adapter.issue(saleRequest())).kind).toBe('issued');
    expect(receipt!.vatCents + receipt!.cityTaxCents).toBeGreaterThan(0);
  });

  it('sends the same billIdSuffix on a retry: PosAPI refuses it and still holds one receipt; the adapter answers unknown, never a second receipt', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url);
    const request = saleRequest();
    expect((await adapter.issue(request)).kind).toBe('issued');
    const again = await adapter.issue(request);
    expect(again.kind).toBe('unknown');
    expect(again.kind === 'unknown' && again.message).toContain(billIdSuffixOf(request.key));
    expect(held(sim)).toHaveLength(1);
  });

  it('an answer lost after PosAPI filed the receipt is unknown, and lookup says it cannot tell (never absent)', async () => {
    const sim = await startRegisters({ ebarimt: { faults: { lostAfterCommit: 1 } } });
    const { adapter } = register(sim.url);
    const request = saleRequest();
    expect((await adapter.issue(request)).kind).toBe('unknown');
    expect(held(sim)).toHaveLength(1);
    const lookup = await adapter.lookup(request);
    expect(lookup.kind).toBe('cannot_tell');
    expect(lookup.kind === 'cannot_tell' && lookup.message).toContain(billIdSuffixOf(request.key));
  });

  it('a timeout before PosAPI filed anything is unknown too (the adapter cannot tell it from a lost answer), and lookup cannot tell', async () => {
    const sim = await startRegisters({ ebarimt: { faults: { timeoutBeforeCommit: 1 } } });
    const { adapter } = register(sim.url, { timeoutMs: 500 });
    const request = saleRequest();
    const outcome = await adapter.issue(request);
    expect(outcome.kind).toBe('unknown');
    expect(held(sim)).toHaveLength(0);
    expect((await adapter.lookup(request)).kind).toBe('cannot_tell');
    // Once the fault is gone the same request files exactly one receipt.
    sim.registers.ebarimt.faults.set({ timeoutBeforeCommit: 0 });
    expect((await adapter.issue(request)).kind).toBe('issued');
    expect(held(sim)).toHaveLength(1);
  });

  it('a timeout after PosAPI filed the receipt is unknown, and PosAPI holds exactly one', async () => {
    const sim = await startRegisters({ ebarimt: { faults: { timeoutAfterCommit: 1 } } });
    const { adapter } = register(sim.url, { timeoutMs: 500 });
    expect((await adapter.issue(saleRequest())).kind).toBe('unknown');
    expect(held(sim)).toHaveLength(1);
  });

  it('a return whose answer was lost is unknown; asking again finds it returned, which is done', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url);
    const request = saleRequest();
    const issued = await adapter.issue(request);
    if (issued.kind !== 'issued') throw new Error(issued.kind);
    sim.registers.ebarimt.faults.set({ lostAfterCommit: 1 });
    expect((await adapter.returnReceipt(issued.receipt, request, 'r')).kind).toBe('unknown');
    sim.registers.ebarimt.faults.set({ lostAfterCommit: 0 });
    expect((await adapter.returnReceipt(issued.receipt, request, 'r')).kind).toBe('issued');
    expect(held(sim)[0]!.status).toBe('returned');
  });

  it('an outage (503) and a refused connection are unavailable: nothing was filed', async () => {
    const sim = await startRegisters({ ebarimt: { faults: { outage: true } } });
    const down = await register(sim.url).adapter.issue(saleRequest());
    expect(down).toMatchObject({ kind: 'unavailable', retryAfterMs: expect.any(Number) });
    expect(held(sim)).toHaveLength(0);
    const refused = await register(await closedPortUrl()).adapter.issue(saleRequest());
    expect(refused.kind).toBe('unavailable');
    const status = await register(await closedPortUrl()).adapter.status();
    expect(status).toMatchObject({ reachable: false, ready: false });
  });

  it('a 500 from PosAPI is unknown: it may have filed the receipt', async () => {
    const sim = await startRegisters({ ebarimt: { faults: { serverError: 1 } } });
    expect((await register(sim.url).adapter.issue(saleRequest())).kind).toBe('unknown');
  });

  it('returns a receipt in full (DELETE with its id and printed date); a retry of the return is done, not refused', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url);
    const request = saleRequest();
    const issued = await adapter.issue(request);
    if (issued.kind !== 'issued') throw new Error(`not issued: ${issued.kind}`);
    const returned = await adapter.returnReceipt(issued.receipt, request, `${request.key}-return`);
    expect(returned).toMatchObject({ kind: 'issued', receipt: { registerId: issued.receipt.registerId } });
    expect(held(sim)[0]!.status).toBe('returned');
    expect((await adapter.returnReceipt(issued.receipt, request, `${request.key}-return`)).kind).toBe('issued');
    const wrongDate = await adapter.returnReceipt({ ...issued.receipt, registerDate: '2020-01-01 00:00:00' }, request, 'x');
    expect(wrongDate.kind).toBe('rejected');
  });

  it("a request PosAPI refuses is rejected with PosAPI's message, and nothing is held", async () => {
    const sim = await startRegisters();
    // The device believes the merchant pays no city tax; PosAPI knows it does.
    const { adapter } = register(sim.url, { registration: { vatPayer: true, cityTax: false } });
    const outcome = await adapter.issue(saleRequest());
    expect(outcome).toMatchObject({ kind: 'rejected', code: 'posapi_error' });
    expect(outcome.kind === 'rejected' && outcome.message).toMatch(/totalCityTax.*city tax/);
    const badDistrict = await register(sim.url, { districtCode: '25' }).adapter.issue(saleRequest());
    expect(badDistrict.kind === 'rejected' && badDistrict.message).toContain('districtCode: must be 4 digits');
    const badBranch = await register(sim.url, { branchNo: '1234' }).adapter.issue(saleRequest());
    expect(badBranch.kind === 'rejected' && badBranch.message).toContain('branchNo: must be 1 to 3 digits');
    expect(held(sim)).toHaveLength(0);
  });

  it('a line without a classification code is rejected before any call', async () => {
    const sim = await startRegisters();
    const outcome = await register(sim.url).adapter.issue(
      saleRequest({ lines: [{ name: 'Gum', classificationCode: null, unit: null, quantity: 1, unitPrice: 500 }] }),
    );
    expect(outcome).toMatchObject({ kind: 'rejected', code: 'invalid_request' });
    expect(sim.registers.ebarimt.records().calls).toHaveLength(0);
  });

  it('status reads /rest/info: ready for our TIN, lottery numbers left, the last send time', async () => {
    const sim = await startRegisters({ ebarimt: { lotteries: 2 } });
    const { adapter } = register(sim.url);
    await adapter.issue(saleRequest());
    const status = await adapter.status();
    expect(status).toMatchObject({ reachable: true, ready: true, lotteryLeft: 1, offlineSince: null });
    expect(Math.abs(status.lastSentAt! - Date.now())).toBeLessThan(60_000);
    const other = await register(sim.url, { merchantTin: '99999999999' }).adapter.status();
    expect(other).toMatchObject({ reachable: true, ready: false });
    expect(other.detail).toContain('not registered for merchant 99999999999');
  });

  it('when the lottery numbers run out, receipts carry none and status says 0 left', async () => {
    const sim = await startRegisters({ ebarimt: { lotteries: 1 } });
    const { adapter } = register(sim.url);
    const first = await adapter.issue(saleRequest());
    const second = await adapter.issue(saleRequest());
    expect(first.kind === 'issued' && first.receipt.lottery).toBeTruthy();
    expect(second).toMatchObject({ kind: 'issued', receipt: { lottery: null } });
    expect((await adapter.status()).lotteryLeft).toBe(0);
  });

  it('before activation every receipt is blocked (a condition of PosAPI, not of the receipt) and status is not ready', async () => {
    const sim = await startRegisters({ ebarimt: { activated: false } });
    const { adapter } = register(sim.url);
    const outcome = await adapter.issue(saleRequest());
    expect(outcome.kind).toBe('blocked');
    expect(outcome.kind === 'blocked' && outcome.message).toMatch(/not activated/);
    expect(held(sim)).toHaveLength(0);
    const status = await adapter.status();
    expect(status).toMatchObject({ reachable: true, ready: false });
    expect(status.detail).toMatch(/not activated/);
  });

  it('flush asks PosAPI to send its offline queue: refused while the tax system is unreachable, done when it is back', async () => {
    const sim = await startRegisters({ ebarimt: { taxSystemReachable: false } });
    const { adapter } = register(sim.url);
    await adapter.issue(saleRequest());
    expect(sim.registers.ebarimt.state()).toMatchObject({ queued: 1 });
    await expect(adapter.flush!()).rejects.toThrow(/tax system cannot be reached/);
    sim.registers.ebarimt.daemon.configure({ taxSystemReachable: true });
    await adapter.flush!();
    expect(sim.registers.ebarimt.state()).toMatchObject({ queued: 0 });
  });

  it('never puts the PosAPI address, the QR data or the lottery number in a log line or a message', async () => {
    const sim = await startRegisters({ ebarimt: { faults: { lostAfterCommit: 1 } } });
    const { adapter, logs } = register(sim.url);
    const lost = await adapter.issue(saleRequest());
    sim.registers.ebarimt.faults.set({ lostAfterCommit: 0 });
    const issued = await adapter.issue(saleRequest());
    if (issued.kind !== 'issued') throw new Error('not issued');
    const down = await register(await closedPortUrl()).adapter.issue(saleRequest());
    const text = JSON.stringify([logs(), lost, down]);
    const port = new URL(sim.url).port;
    expect(text).not.toContain(`127.0.0.1:${port}`);
    expect(text).not.toContain(issued.receipt.qrData!);
    expect(text).not.toContain(issued.receipt.lottery!);
  });
});
