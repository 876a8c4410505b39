import { afterEach, describe, expect, it } from 'vitest';
import { createCaseSettlement } from '../../src/ledger/index.js';
import { ErrorCodes } from '../../src/util/errors.js';
import { buildCore, type Core } from '../helpers/core.js';
import { waterInvoiceRequest } from '../fakes/provider.js';

/**
 * A person's settlement of a parked case, on a real SQLite file with a scriptable provider: each
 * case takes only its own outcomes, closes its alarm with the audit event and history, and a second
 * settlement answers the same without moving money again. Bad input changes nothing.
 */
let core: Core | null = null;
afterEach(() => {
  core?.close();
  core = null;
});

function world() {
  const c = (core = buildCore());
  const cases = createCaseSettlement({
    db: c.db,
    clock: c.clock,
    logger: c.logger,
    outbox: c.outbox,
    provider: c.fake.provider,
    orders: c.orderRepository,
  });
  const alarms = () => c.outbox.openAlarms().map((a) => a.name);
  const settledRows = () => c.db.prepare('SELECT name, outcome, state, by_whom FROM settled_cases ORDER BY name').all();
  /** An orphan the sweep parked: its row, its alarm, and the invoice at the provider. */
  async function parkedOrphan(reference: string, status: 'paid' | 'authorized' = 'paid') {
    const invoice = await c.fake.provider.createInvoice(waterInvoiceRequest(reference, status === 'authorized' ? 'manual' : 'automatic'));
    c.fake.set(invoice.id, status);
    c.db
      .prepare(
        "INSERT INTO orphan_invoices (invoice_id, reference, state, amount, detail, found_at, updated_at) VALUES (?, ?, 'person', 1500, 'parked', 0, 0)",
      )
      .run(invoice.id, reference);
    c.outbox.raiseAlarm(`orphan_invoice/${invoice.id}`, 'critical', 'parked', {});
    return invoice.id;
  }
  return { c, cases, alarms, settledRows, parkedOrphan };
}

describe('settling a parked case', () => {
  it('an orphan refunded by a person: the rest goes back once, under the sweep’s key; the second run sends nothing', async () => {
    const w = world();
    const id = await w.parkedOrphan('svc-test-lostdb-4-00c0ffee');
    const first = await w.cases.settle(`orphan_invoice/${id}`, 'refund', 'cli');
    expect(first).toMatchObject({ state: 'done', again: false, outcome: 'refund' });
    expect(w.c.fake.callsOf('refund').map((call) => call.arg)).toEqual([
      { invoiceId: id, amount: 1500, idempotencyKey: 'svc-test-lostdb-4-00c0ffee-orphan-refund' },
    ]);
    expect(w.alarms()).toEqual([]);
    const again = await w.cases.settle(`orphan_invoice/${id}`, 'refund', 'mqtt');
    expect(again).toMatchObject({ state: 'done', again: true, detail: first.detail });
    expect(w.c.fake.callsOf('refund')).toHaveLength(1);
    await expect(w.cases.settle(`orphan_invoice/${id}`, 'not-ours', 'cli')).rejects.toMatchObject({ code: ErrorCodes.ORDER_STATE });
  });

  it('a held orphan settled as refund is voided; goods-went-out and not-ours move nothing', async () => {
    const w = world();
    const held = await w.parkedOrphan('svc-test-lostdb-5-00000001', 'authorized');
    const kept = await w.parkedOrphan('svc-test-lostdb-6-00000002');
    const foreign = await w.parkedOrphan('svc-test-lostdb-7-00000003');
    expect(await w.cases.settle(`orphan_invoice/${held}`, 'refund', 'cli')).toMatchObject({ state: 'done' });
    expect(w.c.fake.callsOf('cancelInvoice').map((call) => call.arg)).toEqual([held]);
    await w.cases.settle(`orphan_invoice/${kept}`, 'goods-went-out', 'cli');
    await w.cases.settle(`orphan_invoice/${foreign}`, 'not-ours', 'cli');
    expect(w.c.fake.callsOf('refund')).toEqual([]);
    expect(w.alarms()).toEqual([]);
    expect(w.c.db.prepare('SELECT state FROM orphan_invoices ORDER BY reference').all()).toEqual([
      { state: 'settled_refund' },
      { state: 'settled_goods_went_out' },
      { state: 'settled_not_ours' },
    ]);
  });

  it('a refund the provider refuses leaves the case open for another decision', async () => {
    const w = world();
    const id = await w.parkedOrphan('svc-test-lostdb-8-00000004');
    w.c.fake.hooks.refund = () => ({ status: 'failed', detail: 'declined' });
    await expect(w.cases.settle(`orphan_invoice/${id}`, 'refund', 'cli')).rejects.toMatchObject({ code: ErrorCodes.PROVIDER_REJECTED });
    expect(w.alarms()).toEqual([`orphan_invoice/${id}`]);
    expect(w.settledRows()).toEqual([]);
    expect(await w.cases.settle(`orphan_invoice/${id}`, 'goods-went-out', 'cli')).toMatchObject({ state: 'done' });
  });

  it('a refund claim a cut interrupted is looked at again, never re-sent: unknown while the invoice is paid, done once it reads refunded', async () => {
    const w = world();
    const id = await w.parkedOrphan('svc-test-lostdb-3-0000000a');
    w.c.db
      .prepare(
        "INSERT INTO settled_cases (name, outcome, state, by_whom, detail, settled_at, updated_at) VALUES (?, 'refund', 'settling', 'cli', 'refund of 1500 claimed under k', 0, 0)",
      )
      .run(`orphan_invoice/${id}`);
    w.c.db.prepare("UPDATE orphan_invoices SET state = 'settling' WHERE invoice_id = ?").run(id);
    expect(await w.cases.settle(`orphan_invoice/${id}`, 'refund', 'cli')).toMatchObject({ state: 'unknown' });
    w.c.fake.set(id, 'refunded');
    expect(await w.cases.settle(`orphan_invoice/${id}`, 'refund', 'cli')).toMatchObject({ state: 'done' });
    expect(w.c.fake.callsOf('refund')).toEqual([]);
    expect(w.alarms()).toEqual([]);
  });

  it('payment_mismatch, invoice_recovered, refunded_after_vend and forged_event take checked: the alarm closes, the order’s history says who looked', async () => {
    const w = world();
    const order = await w.c.orders.create({ source: 'kiosk', slot: 'A1' });
    w.c.outbox.raiseAlarm(`payment_mismatch/${order.id}`, 'critical', 'mismatch', {});
    w.c.outbox.raiseAlarm('forged_event/evt_1', 'critical', 'forged', {});
    expect(await w.cases.settle(`payment_mismatch/${order.id}`, 'checked', 'cli')).toMatchObject({ state: 'done', again: false });
    expect(await w.cases.settle('forged_event/evt_1', 'checked', 'cli')).toMatchObject({ state: 'done' });
    expect(w.alarms()).toEqual([]);
    expect(w.c.orderRepository.history(order.id).map((h) => h.reason)).toContainEqual(
      expect.stringContaining(`payment_mismatch/${order.id} settled by cli: checked`),
    );
    expect(await w.cases.settle('forged_event/evt_1', 'checked', 'cli')).toMatchObject({ again: true });
  });

  it('bad input gets a clear error and writes nothing', async () => {
    const w = world();
    const id = await w.parkedOrphan('svc-test-lostdb-9-00000005');
    const refused = [
      [`orphan_invoice/${id}`, 'maybe', ErrorCodes.BAD_REQUEST],
      [`orphan_invoice/${id}`, 'checked', ErrorCodes.BAD_REQUEST],
      ['orphan_invoice/pi_nosuch', 'refund', ErrorCodes.NOT_FOUND],
      ['payment_mismatch/999', 'checked', ErrorCodes.NOT_FOUND],
      ['payment_mismatch/1', 'refund', ErrorCodes.BAD_REQUEST],
      ['vend_uncertain/1', 'checked', ErrorCodes.BAD_REQUEST],
      ['no-slash', 'checked', ErrorCodes.BAD_REQUEST],
    ] as const;
    for (const [name, outcome, code] of refused) {
      await expect(w.cases.settle(name, outcome, 'cli'), `${name} ${outcome}`).rejects.toMatchObject({ code });
    }
    expect(w.settledRows()).toEqual([]);
    expect(w.alarms()).toEqual([`orphan_invoice/${id}`]);
    expect(w.c.fake.calls.filter((call) => call.method !== 'createInvoice')).toEqual([]);
  });
});
