import { describe, expect, it } from 'vitest';
import { WEBKASSA_SIM_DEFAULTS, type Simulator } from '../../src/simulator/index.js';
import { startSimulator } from './harness.js';

const D = WEBKASSA_SIM_DEFAULTS;
const CASHBOX = D.cashbox.uniqueNumber;

async function post(sim: Simulator, path: string, body: unknown, apiKey: string | null = D.apiKey) {
  const response = await fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(apiKey ? { 'x-api-key': apiKey } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, any> };
}

async function token(sim: Simulator): Promise<string> {
  return (await post(sim, '/api/v4/Authorize', { Login: D.login, Password: D.password })).json.Data.Token as string;
}

/** A sale of one 1,160 item with 16 % VAT inside (160). */
function check(tokenValue: string, overrides: Record<string, unknown> = {}) {
  return {
    Token: tokenValue,
    CashboxUniqueNumber: CASHBOX,
    OperationType: 2,
    Positions: [{ Count: 1, Price: 1160, TaxPercent: 16, Tax: 160, TaxType: 100, PositionName: 'Cola', UnitCode: 796 }],
    Payments: [{ Sum: 1160, PaymentType: 4 }],
    Change: 0,
    RoundType: 2,
    ExternalCheckNumber: `ext-${Math.random().toString(36).slice(2)}`,
    ...overrides,
  };
}

const checks = (sim: Simulator) => sim.registers.webkassa.records().cashboxes[0]!.checks;
const errorOf = (json: Record<string, any>) => json.Errors?.[0] as { Code: number; Text: string } | undefined;

describe('simulated Webkassa', () => {
  it('authorizes with login and password, refuses wrong ones (1), calls without a Token (3) or without the API key (3)', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    expect(errorOf((await post(sim, '/api/v4/Authorize', { Login: D.login, Password: 'x' })).json)?.Code).toBe(1);
    expect(errorOf((await post(sim, '/api/v4/Check', check('nope'))).json)?.Code).toBe(3);
    const t = await token(sim);
    expect(errorOf((await post(sim, '/api/v4/Check', check(t), null)).json)).toMatchObject({
      Code: 3,
      Text: expect.stringContaining('x-api-key'),
    });
    expect(checks(sim)).toHaveLength(0);
  });

  it('takes a valid sale: check number, date in Kazakhstan time, online, ticket URL', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const { status, json } = await post(sim, '/api/v4/Check', check(await token(sim)));
    expect(status).toBe(200);
    expect(json.Errors).toBeUndefined();
    expect(json.Data).toMatchObject({
      CheckNumber: expect.stringMatching(/^\d+$/),
      OfflineMode: false,
      Cashbox: { UniqueNumber: CASHBOX },
      ShiftNumber: 1,
    });
    expect(json.Data.DateTime).toMatch(/^\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}:\d{2}$/);
  });

  it.each([
    [
      'a wrong VAT',
      { Positions: [{ Count: 1, Price: 1160, TaxPercent: 16, Tax: 100, TaxType: 100, PositionName: 'Cola', UnitCode: 796 }] },
      'Tax: VAT inside the amount must be 160.00',
    ],
    ['payments short of the total', { Payments: [{ Sum: 1000, PaymentType: 4 }] }, "the positions' total 1160.00"],
    ['an unknown payment type', { Payments: [{ Sum: 1160, PaymentType: 9 }] }, 'PaymentType'],
    ['no positions', { Positions: [] }, 'Positions: at least one position is required'],
    ['a purchase', { OperationType: 0 }, 'OperationType'],
    ['a 51-character ExternalCheckNumber', { ExternalCheckNumber: 'x'.repeat(51) }, 'ExternalCheckNumber'],
    [
      'a return naming no sale',
      { OperationType: 3, ReturnBasisDetails: { CheckNumber: '1', DateTime: '', Total: 1160, RegistrationNumber: '', IsOffline: false } },
      'no sale 1',
    ],
    ['a return without its basis', { OperationType: 3 }, 'ReturnBasisDetails'],
  ])('refuses %s with error 9 naming the problem, and takes nothing', async (_what, overrides, text) => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const { json } = await post(sim, '/api/v4/Check', check(await token(sim), overrides));
    expect(errorOf(json)).toMatchObject({ Code: 9, Text: expect.stringContaining(text) });
    expect(checks(sim)).toHaveLength(0);
  });

  it('answers a duplicate ExternalCheckNumber with error 14 and the check it holds, whatever the body says now', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const t = await token(sim);
    const first = await post(sim, '/api/v4/Check', check(t, { ExternalCheckNumber: 'same' }));
    const again = await post(sim, '/api/v4/Check', check(t, { ExternalCheckNumber: 'same', Payments: [{ Sum: 1, PaymentType: 0 }] }));
    expect(errorOf(again.json)?.Code).toBe(14);
    expect(again.json.Data).toEqual(first.json.Data);
    expect(checks(sim)).toHaveLength(1);
  });

  it('refuses a request for a cashbox that is busy with another one (requests of a cashbox go in sequence)', async () => {
    // Each request (the token's too) takes this long: the second check, sent with the first, arrives while the first holds the cashbox.
    const sim = await startSimulator({ provider: 'qutpay', webkassa: { faults: { latencyMs: 400 } } });
    const t = await token(sim);
    const answers = await Promise.all([post(sim, '/api/v4/Check', check(t)), post(sim, '/api/v4/Check', check(t))]);
    expect(answers.map((a) => errorOf(a.json)?.Code ?? 'ok').sort()).toEqual([-1, 'ok'].sort());
    expect(checks(sim)).toHaveLength(1);
  });

  it('works offline for a limited time: checks say OfflineMode, reach the OFD when it is back, and are refused (18) after the limit', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const t = await token(sim);
    await post(sim, '/__sim/webkassa/state', { offline: true });
    expect((await post(sim, '/api/v4/Check', check(t))).json.Data).toMatchObject({ OfflineMode: true, CashboxOfflineMode: true });
    expect(checks(sim)[0]!.sentToOfd).toBe(false);
    await post(sim, '/__sim/webkassa/state', { offlineSince: Date.now() - 73 * 3600_000 });
    expect(errorOf((await post(sim, '/api/v4/Check', check(t))).json)?.Code).toBe(18);
    await post(sim, '/__sim/webkassa/state', { offline: false });
    expect(checks(sim)).toMatchObject([{ sentToOfd: true }]);
    expect((await post(sim, '/api/v4/Check', check(t))).json.Data.OfflineMode).toBe(false);
  });

  it('closes a shift with a Z report (error 13 without one), refuses checks in a shift over 24 h (11)', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const t = await token(sim);
    expect(errorOf((await post(sim, '/api/v4/ZReport', { Token: t, CashboxUniqueNumber: CASHBOX })).json)?.Code).toBe(13);
    await post(sim, '/api/v4/Check', check(t));
    await post(sim, '/__sim/webkassa/state', { shiftOpenedAt: Date.now() - 25 * 3600_000 });
    expect(errorOf((await post(sim, '/api/v4/Check', check(t))).json)?.Code).toBe(11);
    expect((await post(sim, '/api/v4/ZReport', { Token: t, CashboxUniqueNumber: CASHBOX })).json.Data).toMatchObject({
      ShiftNumber: 1,
      DocumentCount: 1,
    });
    expect((await post(sim, '/api/v4/Check', check(t))).json.Data.ShiftNumber).toBe(2);
  });

  it('finds a check by its ExternalCheckNumber, or answers 16', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const t = await token(sim);
    const taken = await post(sim, '/api/v4/Check', check(t, { ExternalCheckNumber: 'find-me' }));
    const path = '/api-history/v4/Ticket/GetTicketByExternalCheckNumber';
    expect((await post(sim, path, { Token: t, CashboxUniqueNumber: CASHBOX, ExternalCheckNumber: 'find-me' })).json.Data).toEqual(
      taken.json.Data,
    );
    expect(errorOf((await post(sim, path, { Token: t, CashboxUniqueNumber: CASHBOX, ExternalCheckNumber: 'nope' })).json)?.Code).toBe(16);
  });

  it('refuses checks of a cashbox that is not activated (10) or unknown (6); admin state refuses bad input and changes nothing', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const t = await token(sim);
    expect(errorOf((await post(sim, '/api/v4/Check', check(t, { CashboxUniqueNumber: 'SWK404' }))).json)?.Code).toBe(6);
    const bad = await post(sim, '/__sim/webkassa/state', { activated: 'no', cashbox: 'SWK404', offlineSince: 'yesterday' });
    expect(bad.status).toBe(400);
    expect(errorOf(bad.json)?.Text).toMatch(/cashbox: no cashbox SWK404.*activated: must be true or false.*offlineSince/);
    expect(sim.registers.webkassa.state()).toMatchObject([{ activated: true, offlineSince: null }]);
    await post(sim, '/__sim/webkassa/state', { activated: false });
    expect(errorOf((await post(sim, '/api/v4/Check', check(t))).json)?.Code).toBe(10);
    expect(checks(sim)).toHaveLength(0);
  });
});
