import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCore, observedOrder, runnerAnswering, type Core } from '../helpers/core.js';
import { createSettlement, type ReceiptPort } from '../../src/vend/index.js';
import type { OrderRow } from '../../src/orders/index.js';

/**
 * Settlement (src/vend/settlement.ts): the database decisions the runner, `vendgate resolve` and the
 * MQTT commands share — queue the money back, park an uncertain vend, a person's settlement of it,
 * an operator's refund. A refused one throws and writes nothing.
 */
let core: Core;
let sold: number[];
beforeEach(() => {
  core = buildCore();
  sold = [];
});
afterEach(() => core.close());

function settlement() {
  const receipts: Pick<ReceiptPort, 'sold'> = { sold: (order: OrderRow) => sold.push(order.id) };
  return createSettlement({ db: core.db, clock: core.clock, outbox: core.outbox, orderRepository: core.orderRepository, receipts });
}

async function paidOrder() {
  const order = await observedOrder(core, 'paid');
  return order;
}

/** A paid order whose actuator could not say whether it delivered: parked for a person. */
async function uncertainOrder() {
  const vend = runnerAnswering(core, { result: 'unknown', detail: 'no answer' });
  const order = await paidOrder();
  await vend.run();
  expect(core.orders.get(order.id)!.state).toBe('vend_uncertain');
  return order;
}

const snapshot = () => ({
  orders: core.db.prepare('SELECT id, state FROM orders ORDER BY id').all(),
  refunds: core.db.prepare('SELECT * FROM refunds').all(),
  jobs: core.db.prepare('SELECT * FROM vend_jobs').all(),
  outbox: core.count('SELECT count(*) AS n FROM outbox'),
});

describe('settlement', () => {
  it('an uncertain vend raises vend_uncertain; resolved as vended it keeps the money, owes its receipt and clears the alarm', async () => {
    const order = await uncertainOrder();
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual([`vend_uncertain/${order.id}`]);
    const resolved = settlement().resolve(order.id, true, 'alice');
    expect(resolved.state).toBe('vended');
    expect(sold).toEqual([order.id]);
    expect(core.outbox.openAlarms()).toEqual([]);
    expect(core.count('SELECT count(*) AS n FROM refunds')).toBe(0);
    expect(core.db.prepare('SELECT state, outcome FROM vend_jobs WHERE order_id = ?').get(order.id)).toEqual({
      state: 'resolved',
      outcome: 'resolved_vended',
    });
  });

  it('resolved as not vended, the whole amount is queued back with the order’s own key', async () => {
    const order = await uncertainOrder();
    expect(settlement().resolve(order.id, false, 'alice').state).toBe('refunding');
    expect(sold).toEqual([]);
    expect(core.db.prepare('SELECT kind, amount, state, idempotency_key FROM refunds').all()).toEqual([
      { kind: 'refund', amount: 1500, state: 'requested', idempotency_key: `${order.reference}-refund` },
    ]);
  });

  it('resolving an order that is not uncertain, or no order, throws and changes nothing', async () => {
    const order = await paidOrder();
    const before = snapshot();
    expect(() => settlement().resolve(order.id, true)).toThrow(expect.objectContaining({ code: 'VG_ERR_ORDER_STATE' }));
    expect(() => settlement().resolve(9_999, false)).toThrow(expect.objectContaining({ code: 'VG_ERR_ORDER_NOT_FOUND' }));
    expect(snapshot()).toEqual(before);
  });

  it('an operator refunds a paid order: refunding, one refund queued; an unpaid order is refused and nothing is written', async () => {
    const paid = await paidOrder();
    expect(settlement().refund(paid.id, 'bob').state).toBe('refunding');
    expect(core.db.prepare('SELECT order_id, kind, amount FROM refunds').all()).toEqual([
      { order_id: paid.id, kind: 'refund', amount: 1500 },
    ]);
    const unpaid = await core.orders.create({ source: 'kiosk', slot: 'A2' });
    const before = snapshot();
    expect(() => settlement().refund(unpaid.id)).toThrow(expect.objectContaining({ code: 'VG_ERR_ORDER_STATE' }));
    expect(() => settlement().refund(paid.id)).toThrow(expect.objectContaining({ code: 'VG_ERR_ORDER_STATE' }));
    expect(snapshot()).toEqual(before);
  });

  it('a held authorization (manual capture) is given back as a void, not a refund', async () => {
    core.close();
    core = buildCore({ provider: { captureMode: 'manual' } });
    const order = await observedOrder(core, 'authorized');
    settlement().refund(order.id, 'bob');
    expect(core.db.prepare('SELECT kind, amount FROM refunds').all()).toEqual([{ kind: 'void', amount: 1500 }]);
  });
});
