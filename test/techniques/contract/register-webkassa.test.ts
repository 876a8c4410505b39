import { describe, expect, it } from 'vitest';
import { type WebkassaOptions } from '../../../src/fiscal/webkassa/index.js';
import { WEBKASSA_SIM_DEFAULTS, type Simulator } from '../../../src/simulator/index.js';
import { captureLogger } from '../../hardware/fakes/capture-logger.js';
import { closedPortUrl, saleRequest, simWebkassaRegister, startRegisters, webkassaSessionToken } from './register-harness.js';

const D = WEBKASSA_SIM_DEFAULTS;
const HOUR = 3600_000;

function register(url: string, overrides: Partial<WebkassaOptions> = {}) {
  const capture = captureLogger();
  const adapter = simWebkassaRegister(url, { logger: capture.logger, ...overrides });
  return { adapter, logs: capture.entries };
}

const sale = () =>
  saleRequest({ currency: 'KZT', lines: [{ name: 'Cola 0.5 l', classificationCode: null, unit: null, quantity: 1, unitPrice: 1160 }] });
const checks = (sim: Simulator) => sim.registers.webkassa.records().cashboxes[0]!.checks;
const configure = (sim: Simulator, state: Record<string, unknown>) => sim.registers.webkassa.configure(state);

describe('Webkassa adapter against the simulated Webkassa', () => {
  it('issues a check: 1,160 with 16 % VAT inside, its check number, date, ticket URL for the QR, no lottery, online', async () => {
    const sim = await startRegisters();
    const outcome = await register(sim.url).adapter.issue(sale());
    expect(outcome).toMatchObject({ kind: 'issued', receipt: { lottery: null, offline: false } });
    if (outcome.kind !== 'issued') return;
    expect(outcome.receipt.registerId).toMatch(/^\d+$/);
    expect(outcome.receipt.registerDate).toMatch(/^\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}:\d{2}$/);
    expect(outcome.receipt.qrData).toContain(`i=${outcome.receipt.registerId}`);
    expect(checks(sim)).toMatchObject([{ totalCents: 116_000, operationType: 2 }]);
  });

  it('the same key again is answered with the check already held (error 14), never a second check', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url);
    const request = sale();
    const first = await adapter.issue(request);
    const second = await adapter.issue(request);
    expect(second).toEqual(first);
    expect(checks(sim)).toHaveLength(1);
  });

  it('an answer lost after the check was taken is unknown; lookup finds it; issuing again answers the same check', async () => {
    const sim = await startRegisters({ webkassa: { faults: { lostAfterCommit: 1 } } });
    const { adapter } = register(sim.url);
    const request = sale();
    // Authorize is lost too: the adapter tells it from the check (nothing taken) and says unavailable.
    expect((await adapter.issue(request)).kind).toBe('unavailable');
    sim.registers.webkassa.faults.set({ lostAfterCommit: 0 });
    await adapter.status();
    sim.registers.webkassa.faults.set({ lostAfterCommit: 1 });
    expect((await adapter.issue(request)).kind).toBe('unknown');
    expect(checks(sim)).toHaveLength(1);
    sim.registers.webkassa.faults.set({ lostAfterCommit: 0 });
    const found = await adapter.lookup(request);
    expect(found).toMatchObject({ kind: 'found', receipt: { registerId: checks(sim)[0]!.checkNumber } });
    expect(await adapter.issue(request)).toEqual({ kind: 'issued', receipt: found.kind === 'found' ? found.receipt : null });
    expect(checks(sim)).toHaveLength(1);
  });

  it('a timeout before anything was taken is unknown; lookup says absent; issuing again makes exactly one check', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url, { timeoutMs: 500 });
    await adapter.status(); // authorized before the fault
    sim.registers.webkassa.faults.set({ timeoutBeforeCommit: 1 });
    const request = sale();
    expect((await adapter.issue(request)).kind).toBe('unknown');
    sim.registers.webkassa.faults.set({ timeoutBeforeCommit: 0 });
    expect(await adapter.lookup(request)).toEqual({ kind: 'absent' });
    expect((await adapter.issue(request)).kind).toBe('issued');
    expect(checks(sim)).toHaveLength(1);
  });

  it('a timeout after the check was taken is unknown; lookup finds the check', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url, { timeoutMs: 500 });
    await adapter.status();
    sim.registers.webkassa.faults.set({ timeoutAfterCommit: 1 });
    const request = sale();
    expect((await adapter.issue(request)).kind).toBe('unknown');
    sim.registers.webkassa.faults.set({ timeoutAfterCommit: 0 });
    expect(await adapter.lookup(request)).toMatchObject({ kind: 'found', receipt: { registerId: checks(sim)[0]!.checkNumber } });
  });

  it('an outage (503) and a refused connection are unavailable; a 500 is unknown', async () => {
    const sim = await startRegisters({ webkassa: { faults: { outage: true } } });
    expect((await register(sim.url).adapter.issue(sale())).kind).toBe('unavailable');
    expect((await register(await closedPortUrl()).adapter.issue(sale())).kind).toBe('unavailable');
    expect(await register(await closedPortUrl()).adapter.status()).toMatchObject({ reachable: false, ready: false });
    sim.registers.webkassa.faults.set({ outage: false });
    const { adapter } = register(sim.url);
    await adapter.status();
    sim.registers.webkassa.faults.set({ serverError: 1 });
    expect((await adapter.issue(sale())).kind).toBe('unknown');
    expect(checks(sim)).toHaveLength(0);
  });

  it('returns a check in full: a sale return naming its sale; the return key is idempotent too', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url);
    const request = sale();
    const issued = await adapter.issue(request);
    if (issued.kind !== 'issued') throw new Error(issued.kind);
    const returned = await adapter.returnReceipt(issued.receipt, request, `${request.key}-r`);
    expect(returned.kind).toBe('issued');
    expect(await adapter.returnReceipt(issued.receipt, request, `${request.key}-r`)).toEqual(returned);
    expect(checks(sim).map((c) => [c.operationType, c.returnedBy !== null || c.returns !== null])).toEqual([
      [2, true],
      [3, true],
    ]);
    const again = await adapter.returnReceipt(issued.receipt, request, `${request.key}-r2`);
    expect(again.kind === 'rejected' && again.message).toContain('already returned');
  });

  it("a check Webkassa refuses is rejected with Webkassa's message, and nothing is held", async () => {
    const sim = await startRegisters();
    const outcome = await register(sim.url, { vatPercent: 12 }).adapter.issue(sale());
    expect(outcome).toMatchObject({ kind: 'rejected', code: 'invalid_request' });
    expect(outcome.kind === 'rejected' && outcome.message).toContain('TaxPercent: must be 16');
    expect(checks(sim)).toHaveLength(0);
  });

  it('status: ready online; offline mode shows in answers and status (offlineSince, hours left); past 72 h checks are refused', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url);
    expect(await adapter.status()).toMatchObject({ reachable: true, ready: true, offlineSince: null, lotteryLeft: null });
    configure(sim, { offline: true });
    const offline = await adapter.issue(sale());
    expect(offline).toMatchObject({ kind: 'issued', receipt: { offline: true } });
    const status = await adapter.status();
    expect(status).toMatchObject({ reachable: true, ready: true, offlineSince: expect.any(Number) });
    expect(status.detail).toMatch(/offline: \d+ h left of 72 h/);
    configure(sim, { offlineSince: Date.now() - 73 * HOUR });
    expect((await adapter.issue(sale())).kind).toBe('unavailable');
    expect(checks(sim)).toHaveLength(1);
    // A fresh adapter that first hears of it from the refusal knows the limit is past, too.
    const fresh = register(sim.url);
    expect((await fresh.adapter.issue(sale())).kind).toBe('unavailable');
    expect((await fresh.adapter.status()).ready).toBe(false);
    configure(sim, { offline: false });
    expect((await adapter.status()).offlineSince).toBeNull();
    expect(sim.registers.webkassa.records().cashboxes[0]!.checks[0]!.sentToOfd).toBe(true);
  });

  it('a cashbox that is not activated or unknown blocks every check (nothing held), and status says not ready', async () => {
    const sim = await startRegisters({ webkassa: { cashboxes: [{ ...D.cashbox, activated: false }] } });
    const { adapter } = register(sim.url);
    expect(await adapter.issue(sale())).toMatchObject({ kind: 'blocked', message: expect.stringContaining('not activated') });
    expect(checks(sim)).toHaveLength(0);
    expect(await adapter.status()).toMatchObject({ reachable: true, ready: false, detail: expect.stringContaining('not activated') });
    expect((await register(sim.url, { cashboxUniqueNumber: 'SWK404' }).adapter.issue(sale())).kind).toBe('blocked');
  });

  it('sends the calls of one cashbox one after another: concurrent issues all succeed where the register refuses overlapping calls', async () => {
    const sim = await startRegisters({ webkassa: { faults: { latencyMs: 100 } } });
    const { adapter } = register(sim.url);
    const outcomes = await Promise.all([adapter.issue(sale()), adapter.issue(sale()), adapter.issue(sale()), adapter.lookup(sale())]);
    expect(outcomes.map((o) => o.kind)).toEqual(['issued', 'issued', 'issued', 'absent']);
    expect(sim.registers.webkassa.records().calls.filter((c) => c.fault === 'busy')).toHaveLength(0);
  });

  it('renews an expired session once and keeps the key; wrong credentials or API key block; no secret reaches a log line', async () => {
    const sim = await startRegisters();
    const { adapter, logs } = register(sim.url);
    expect((await adapter.issue(sale())).kind).toBe('issued');
    configure(sim, { expireTokens: true });
    expect((await adapter.issue(sale())).kind).toBe('issued');
    expect(sim.registers.webkassa.records().calls.filter((c) => c.path === '/api/v4/Authorize')).toHaveLength(2);
    const wrong = await register(sim.url, { password: 'nope' }).adapter.issue(sale());
    expect(wrong).toMatchObject({ kind: 'blocked', message: expect.stringContaining('VENDGATE_FISCAL_WEBKASSA_PASSWORD') });
    const noKey = await register(sim.url, { apiKey: 'wrong' }).adapter.issue(sale());
    expect(noKey.kind).toBe('blocked');
    const text = JSON.stringify(logs());
    expect(text).not.toContain(D.password);
    expect(text).not.toContain(D.apiKey);
    expect(text).not.toMatch(/"wk0000\d\d/);
  });

  it('works with a session token set beforehand (no login): used while valid, blocked once it expired', async () => {
    const sim = await startRegisters();
    const token = await webkassaSessionToken(sim);
    const { adapter, logs } = register(sim.url, { login: undefined, password: undefined, token });
    expect((await adapter.issue(sale())).kind).toBe('issued');
    configure(sim, { expireTokens: true });
    const expired = await adapter.issue(sale());
    expect(expired).toMatchObject({ kind: 'blocked', message: expect.stringContaining('set a new token') });
    // A lookup meanwhile is blocked too (the register, not the check): never "absent".
    expect((await adapter.lookup(sale())).kind).toBe('blocked');
    expect(JSON.stringify(logs())).not.toContain(token);
  });

  it('a shift open longer than 24 hours is closed with a Z report and the check goes through in a new shift', async () => {
    const sim = await startRegisters();
    const { adapter } = register(sim.url);
    await adapter.issue(sale());
    configure(sim, { shiftOpenedAt: Date.now() - 25 * HOUR });
    expect((await adapter.issue(sale())).kind).toBe('issued');
    expect(checks(sim).map((c) => c.shiftNumber)).toEqual([1, 2]);
  });
});
