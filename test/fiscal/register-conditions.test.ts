import { afterEach, describe, expect, it } from 'vitest';
import { buildFiscalCore, type FiscalHarness } from './harness.js';
import { billIdSuffixOf } from '../../src/fiscal/ebarimt/index.js';
import { WEBKASSA_SIM_DEFAULTS, type Simulator } from '../../src/simulator/index.js';
import type { Clock } from '../../src/util/clock.js';
import { simEbarimtRegister, simWebkassaRegister, startRegisters, webkassaSessionToken } from '../techniques/contract/register-harness.js';

/**
 * The worker and the operator's view with the real adapters, over HTTP to the simulated PosAPI and
 * Webkassa: what counts as "the register does not answer" (alarm, stop of sales) and what does not.
 */
const MIN = 60_000;
const D = WEBKASSA_SIM_DEFAULTS;

/** The settings of each register (required by the schema; the adapter itself is built by the test). */
const ebarimtSettings = (sim: Simulator, more: Record<string, unknown>) => ({
  register: 'ebarimt',
  ebarimt: { url: sim.url, merchantTin: '10000000001', posNo: '10020030', districtCode: '2501', classificationCode: '2441100' },
  ...more,
});
const webkassaSettings = (sim: Simulator, more: Record<string, unknown>) => ({
  register: 'webkassa',
  webkassa: { url: sim.url, login: D.login, password: D.password, apiKey: D.apiKey, cashboxId: D.cashbox.uniqueNumber },
  ...more,
});

function ebarimt(sim: Simulator) {
  return (clock: Clock) => simEbarimtRegister(sim.url, { defaultClassificationCode: '2441100', timeoutMs: 5_000, clock });
}

function webkassa(sim: Simulator, auth: { token: string } | { login: string; password: string }) {
  return (clock: Clock) => simWebkassaRegister(sim.url, { login: undefined, password: undefined, ...auth, timeoutMs: 5_000, clock });
}

async function minutes(h: FiscalHarness, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) {
    h.clock.advance(MIN);
    await h.pass();
  }
}

describe('register conditions against the simulated registers', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  it('eBarimt: a lost answer goes to a person (receipt_unknown); PosAPI answering the rest is not unreachable and stops no sales', async () => {
    const sim = await startRegisters({ ebarimt: { faults: { lostAfterCommit: 1 } } });
    h = buildFiscalCore({
      register: ebarimt(sim),
      fiscal: ebarimtSettings(sim, { alarmUnreachableAfterMin: 15, alarmUnknownAfterMin: 30, stopSalesAfterHours: 2, lookupEveryMs: MIN }),
    });
    const lost = await h.sell();
    await h.pass();
    expect(h.receipts(lost.id)[0]).toMatchObject({ state: 'unknown', attempts: 1 });
    sim.registers.ebarimt.faults.set({ lostAfterCommit: 0 });

    // Twenty quiet minutes: PosAPI cannot be asked about the lost one, but it answers its status.
    await minutes(h, 20);
    expect(h.alarms()).not.toContain('fiscal_register_unreachable');
    expect(h.fiscal.snapshot().reachable).toBe(true);

    const next = await h.sell();
    await h.pass();
    expect(h.receipts(next.id)[0]).toMatchObject({ state: 'issued' });
    await minutes(h, 130);
    expect(h.alarms()).toContain(`receipt_unknown/${lost.id}`);
    expect(h.alarms()).not.toContain('fiscal_register_unreachable');
    expect(h.stopped.reason).toBeNull();
    expect(h.fiscal.snapshot()).toMatchObject({ reachable: true, pending: 1, unknown: 1, salesStopped: null });
    // The lost one was never sent again: PosAPI holds one receipt under its suffix.
    const suffix = billIdSuffixOf(JSON.parse(h.receipts(lost.id)[0]!.request_json as string).key as string);
    expect(sim.registers.ebarimt.records().receipts.filter((r) => r.billIdSuffix === suffix)).toHaveLength(1);
    expect(h.receipts(lost.id)[0]).toMatchObject({ state: 'unknown', attempts: 1 });
  });

  it('eBarimt: PosAPI that does not answer at all still raises fiscal_register_unreachable and stops sales', async () => {
    const sim = await startRegisters({ ebarimt: { faults: { outage: true } } });
    h = buildFiscalCore({
      register: ebarimt(sim),
      fiscal: ebarimtSettings(sim, { alarmUnreachableAfterMin: 15, stopSalesAfterHours: 2 }),
    });
    await h.sell();
    await h.pass();
    await minutes(h, 121);
    expect(h.alarms()).toContain('fiscal_register_unreachable');
    expect(h.stopped.reason).toMatch(/receipts could not be issued for 2 h/);
  });

  it('Webkassa: a lapsed session token is one register alarm saying what to do; the checks wait, stop sales, and go once it works again', async () => {
    const sim = await startRegisters();
    const token = await webkassaSessionToken(sim);
    let auth: { token: string } | { login: string; password: string } = { token };
    h = buildFiscalCore({
      register: (clock) => webkassa(sim, auth)(clock),
      fiscal: webkassaSettings(sim, { alarmUnreachableAfterMin: 15, stopSalesAfterHours: 2 }),
    });
    const first = await h.sell();
    await h.pass();
    expect(h.receipts(first.id)[0]).toMatchObject({ state: 'issued' });

    sim.registers.webkassa.configure({ expireTokens: true });
    const waiting = [await h.sell(), await h.sell()];
    await h.pass();
    await minutes(h, 5);
    for (const order of waiting) expect(h.receipts(order.id)[0]).toMatchObject({ state: 'queued' });
    expect(h.alarms().filter((a) => a.startsWith('receipt_rejected/'))).toEqual([]);
    expect(h.alarms()).toEqual(['fiscal_register_blocked']);
    const alarm = h.node.outbox.openAlarms().find((a) => a.name === 'fiscal_register_blocked')!;
    expect(alarm.message).toContain('set a new token');
    expect(alarm.message).not.toContain(token);

    await minutes(h, 120);
    expect(h.alarms().filter((a) => a.startsWith('fiscal_register'))).toEqual(['fiscal_register_blocked']);
    expect(h.stopped.reason).toMatch(/receipts could not be issued for 2 h/);
    expect(h.node.outbox.pending(10_000).filter((r) => r.topic === 'alarms/fiscal_register_blocked')).toHaveLength(1);

    // The operator sets a login and restarts: the waiting checks go, once each, and sales resume.
    auth = { login: D.login, password: D.password };
    await h.restart();
    await h.pass();
    for (const order of waiting) expect(h.receipts(order.id)[0]).toMatchObject({ state: 'issued', last_error: null });
    expect(h.alarms()).toEqual([]);
    expect(h.stopped.reason).toBeNull();
    expect(sim.registers.webkassa.records().cashboxes[0]!.checks).toHaveLength(3);
  });

  it('Webkassa: a cashbox that is not activated blocks every check until it is; then the waiting checks go without a restart', async () => {
    const sim = await startRegisters({ webkassa: { cashboxes: [{ ...D.cashbox, activated: false }] } });
    h = buildFiscalCore({
      register: webkassa(sim, { login: D.login, password: D.password }),
      fiscal: webkassaSettings(sim, { retryMaxMs: MIN }),
    });
    const order = await h.sell();
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'queued' });
    expect(h.alarms()).toEqual(['fiscal_register_blocked']);
    expect(h.node.outbox.openAlarms()[0]!.message).toMatch(/not activated.*Webkassa's cabinet/);
    sim.registers.webkassa.configure({ activated: true });
    await minutes(h, 1);
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'issued' });
    expect(h.alarms()).toEqual([]);
    expect(sim.registers.webkassa.records().cashboxes[0]!.checks).toHaveLength(1);
  });
});
