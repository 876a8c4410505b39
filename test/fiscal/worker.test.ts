import { afterEach, describe, expect, it } from 'vitest';
import { askedByKeyThenOneReceipt, buildFiscalCore, type FiscalHarness } from './harness.js';
import { VendgateError } from '../../src/util/errors.js';

describe('fiscal worker against the sandbox register', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  it('issues exactly one sale receipt for a delivered vend, written with the settled vend', async () => {
    h = buildFiscalCore();
    const order = await h.sell();
    expect(order.state).toBe('vended');
    // Written in the vend's own transaction, before any register call.
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'queued', key: `${order.reference}-sale`, attempts: 0 }]);
    await h.pass();
    const [row] = h.receipts(order.id);
    expect(row).toMatchObject({ state: 'issued', attempts: 1 });
    expect(row!.register_id).toMatch(/^SBX/);
    expect(h.register.held()).toHaveLength(1);
    expect(h.node.outbox.counters().receipts_issued).toBe(1);
    // The QR is in memory for the screen; the database keeps only what a return needs.
    expect(h.fiscal.screen(order.id)).toMatchObject({ status: 'issued', qrData: expect.stringContaining(row!.register_id) });
    expect(JSON.stringify(row)).not.toContain('SANDBOX-FISCAL');
  });

  it('a vend that fails gets no receipt', async () => {
    h = buildFiscalCore();
    h.machine.next = () => ({ result: 'failed', reason: 'motor stalled' });
    const order = await h.sell();
    expect(order.state).not.toBe('vended');
    await h.pass();
    expect(h.receipts()).toEqual([]);
    expect(h.register.held()).toEqual([]);
    expect(h.fiscal.screen(order.id)).toBeNull();
  });

  it('an answer lost after the register committed is found by lookup: one receipt, never a second issue', async () => {
    h = buildFiscalCore();
    h.register.faults.loseNextAnswers(1);
    const order = await h.sell();
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'unknown', attempts: 1 });
    expect(h.fiscal.screen(order.id)).toMatchObject({ status: 'pending' });
    // Not retried blindly: nothing happens before the lookup is due.
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'unknown', attempts: 1 });
    h.clock.advance(h.settings.fiscal.lookupEveryMs);
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'issued', attempts: 1 });
    expect(h.register.held()).toHaveLength(1);
  });

  it('a timeout before the register committed: lookup says absent, then one issue with the same key', async () => {
    h = buildFiscalCore();
    h.register.faults.timeOutNext(1);
    const order = await h.sell();
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'unknown' });
    expect(h.register.held()).toHaveLength(0);
    h.clock.advance(h.settings.fiscal.lookupEveryMs);
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'issued', attempts: 2 });
    expect(h.register.held().map((r) => r.key)).toEqual([`${order.reference}-sale`]);
  });

  it('a crash between the claim and the call: after the restart the register is asked first, then one receipt', async () => {
    h = buildFiscalCore();
    const order = await h.sell();
    h.crash.at = 'after_receipt_claim';
    await expect(h.fiscal.worker.run()).rejects.toThrow(/crash/);
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'sending', attempts: 1 });
    await h.restart();
    await askedByKeyThenOneReceipt(h, order.id);
  });

  it('a crash after the register committed but before its answer was written: the restart finds it, one receipt', async () => {
    h = buildFiscalCore();
    const order = await h.sell();
    h.crash.at = 'after_receipt_call';
    await expect(h.fiscal.worker.run()).rejects.toThrow(/crash/);
    expect(h.register.held()).toHaveLength(1);
    await h.restart();
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'issued', attempts: 1 });
    expect(h.register.held()).toHaveLength(1);
  });

  it('a crash between the vend and any receipt call keeps the row: the receipt is sent after the restart', async () => {
    h = buildFiscalCore();
    const order = await h.sell();
    await h.restart();
    await h.pass();
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'issued' }]);
    expect(h.register.held()).toHaveLength(1);
  });

  it('a refund of a receipted sale gets exactly one full return', async () => {
    h = buildFiscalCore();
    const order = await h.sell();
    await h.pass();
    h.node.money.vend.refund(order.id, 'test');
    await h.node.money.refunds.run();
    expect(h.node.orderRepository.get(order.id)!.state).toBe('refunded');
    expect(h.receipts(order.id).map((r) => [r.kind, r.state])).toEqual([
      ['sale', 'issued'],
      ['return', 'queued'],
    ]);
    await h.pass();
    await h.pass();
    const held = h.register.held();
    expect(held.map((r) => r.kind)).toEqual(['sale', 'return']);
    expect(held[1]!.returns_id).toBe(held[0]!.register_id);
    expect(h.node.outbox.counters().receipts_returned).toBe(1);
  });

  it('a refund while the sale receipt still waits: the return waits for the sale, then both, once each', async () => {
    h = buildFiscalCore();
    h.register.faults.outageUntil(h.clock.now() + 3_600_000);
    const order = await h.sell();
    await h.pass();
    h.node.money.vend.refund(order.id, 'test');
    await h.node.money.refunds.run();
    await h.pass();
    expect(h.register.held()).toEqual([]);
    h.register.faults.outageUntil(null);
    h.clock.advance(h.settings.fiscal.retryMaxMs + h.settings.fiscal.lookupEveryMs);
    await h.pass();
    h.clock.advance(h.settings.fiscal.lookupEveryMs);
    await h.pass();
    expect(h.register.held().map((r) => r.kind)).toEqual(['sale', 'return']);
    expect(h.receipts(order.id).map((r) => r.state)).toEqual(['issued', 'issued']);
  });

  it('a person resolving an uncertain vend as vended owes its receipt', async () => {
    h = buildFiscalCore();
    h.machine.next = () => ({ result: 'unknown', detail: 'no answer' });
    const order = await h.sell();
    expect(order.state).toBe('vend_uncertain');
    expect(h.receipts()).toEqual([]);
    h.node.money.vend.resolve(order.id, true, 'test');
    await h.pass();
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'issued' }]);
  });

  it('a refused receipt raises a critical alarm and is never retried', async () => {
    h = buildFiscalCore();
    const order = await h.sell();
    h.node.db.prepare("UPDATE receipts SET request_json = json_set(request_json, '$.total', 0)").run();
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'rejected' });
    expect(h.alarms()).toContain(`receipt_rejected/${order.id}`);
    h.clock.advance(3_600_000);
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'rejected', attempts: 1 });
  });
});

describe('fiscal alarms and the stop of sales', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  it('register unreachable and receipts waiting: one alarm each after their settings, cleared when receipts flow again', async () => {
    h = buildFiscalCore({ fiscal: { alarmUnreachableAfterMin: 5, alarmWaitingAfterMin: 10 } });
    h.register.faults.outageUntil(h.clock.now() + 86_400_000);
    await h.sell();
    await h.pass();
    expect(h.alarms()).toEqual([]);
    h.clock.advance(5 * 60_000);
    await h.pass();
    expect(h.alarms()).toEqual(['fiscal_register_unreachable']);
    h.clock.advance(5 * 60_000);
    await h.pass();
    expect(h.alarms().sort()).toEqual(['fiscal_receipts_waiting', 'fiscal_register_unreachable']);
    const published = h.node.outbox.pending(1000).filter((r) => r.topic === 'alarms/fiscal_register_unreachable');
    expect(published).toHaveLength(1);
    h.register.faults.outageUntil(null);
    h.clock.advance(h.settings.fiscal.retryMaxMs);
    await h.pass();
    expect(h.alarms()).toEqual([]);
  });

  it('a receipt unknown longer than alarmUnknownAfterMin raises a critical alarm; it keeps being asked, not reissued', async () => {
    h = buildFiscalCore({ fiscal: { alarmUnknownAfterMin: 30, lookupEveryMs: 60_000 } });
    h.register.faults.loseNextAnswers(1);
    const order = await h.sell();
    await h.pass();
    h.register.faults.outageUntil(h.clock.now() + 86_400_000);
    for (let i = 0; i < 31; i += 1) {
      h.clock.advance(60_000);
      await h.pass();
    }
    expect(h.alarms()).toContain(`receipt_unknown/${order.id}`);
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'unknown', attempts: 1 });
    h.register.faults.outageUntil(null);
    h.clock.advance(60_000);
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'issued', attempts: 1 });
    expect(h.alarms()).not.toContain(`receipt_unknown/${order.id}`);
    expect(h.register.held()).toHaveLength(1);
  });

  it('lottery numbers below a week of this machine’s sales raise fiscal_lottery_low', async () => {
    h = buildFiscalCore({ lotteryStock: 12 });
    for (let i = 0; i < 3; i += 1) {
      await h.sell();
      await h.pass();
    }
    // The register's status is asked once a minute.
    h.clock.advance(60_000);
    await h.pass();
    // 3 sales today (a machine one day old: 3 a day), 9 numbers left: less than 7 days × 3.
    expect(h.fiscal.snapshot()).toMatchObject({ lotteryLeft: 9 });
    expect(h.alarms()).toContain('fiscal_lottery_low');
  });

  it('stopSalesAfterHours: new orders are refused with VG_ERR_OUT_OF_SERVICE once receipts wait that long, taken again after', async () => {
    h = buildFiscalCore({ fiscal: { stopSalesAfterHours: 2 } });
    h.register.faults.outageUntil(h.clock.now() + 86_400_000);
    await h.sell();
    await h.pass();
    h.clock.advance(2 * 3_600_000);
    await h.pass();
    expect(h.stopped.reason).toMatch(/receipts could not be issued for 2 h/);
    const refused = await h.node.money.orders.create({ source: 'kiosk', slot: 'A1' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(VendgateError);
    expect((refused as VendgateError).code).toBe('VG_ERR_OUT_OF_SERVICE');
    expect((refused as VendgateError).message).toMatch(/receipts could not be issued/);
    h.register.faults.outageUntil(null);
    h.clock.advance(h.settings.fiscal.retryMaxMs);
    await h.pass();
    expect(h.stopped.reason).toBeNull();
    expect((await h.node.money.orders.create({ source: 'kiosk', slot: 'A1' })).state).toBe('awaiting_payment');
  });

  it('stopSalesAfterHours is off by default', async () => {
    h = buildFiscalCore();
    h.register.faults.outageUntil(h.clock.now() + 30 * 86_400_000);
    await h.sell();
    h.clock.advance(10 * 86_400_000);
    await h.pass();
    expect(h.stopped.reason).toBeNull();
  });
});
