import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCore, observedOrder, type Core } from '../helpers/core.js';

/**
 * The refund worker (src/vend/refunds.ts) on the composed money path: a real SQLite file, the
 * scriptable provider and a manual clock. It reads the invoice before sending, sends once with the
 * derived key, never re-sends an unknown outcome blindly, and calls a person when it cannot settle.
 */
let core: Core;
beforeEach(() => {
  core = buildCore();
});
afterEach(() => core.close());

async function paidOrder() {
  const order = await observedOrder(core, 'paid');
  return order;
}

const refundRow = () => core.db.prepare('SELECT kind, state, amount, attempts, last_error FROM refunds').get();
const events = (type: string) =>
  (core.db.prepare("SELECT payload FROM outbox WHERE kind = 'event' ORDER BY seq").all() as { payload: string }[])
    .map((row) => JSON.parse(row.payload) as { type: string })
    .filter((e) => e.type === type);

describe('the refund worker', () => {
  it('sends a requested refund once, with its derived key, and completes the order', async () => {
    const order = await paidOrder();
    core.money.vend.refund(order.id, 'test');
    await core.money.refunds.run();
    await core.money.refunds.run();
    expect(core.fake.callsOf('refund')).toEqual([
      { method: 'refund', arg: { invoiceId: order.invoice_id, amount: 1500, idempotencyKey: `${order.reference}-refund` } },
    ]);
    expect(core.orders.get(order.id)!.state).toBe('refunded');
    expect(refundRow()).toMatchObject({ kind: 'refund', state: 'succeeded', amount: 1500 });
    expect(events('refund.succeeded')).toEqual([expect.objectContaining({ orderId: order.id, amount: 1500 })]);
  });

  it('sends nothing when the invoice is already refunded at the provider (the dashboard, a lost record)', async () => {
    const order = await paidOrder();
    core.money.vend.refund(order.id, 'test');
    core.fake.set(order.invoice_id!, 'refunded');
    await core.money.refunds.run();
    expect(core.fake.callsOf('refund')).toEqual([]);
    expect(core.orders.get(order.id)!.state).toBe('refunded');
    expect(refundRow()).toMatchObject({ state: 'succeeded' });
  });

  it('sends only the rest of an invoice refunded in part', async () => {
    const order = await paidOrder();
    core.money.vend.refund(order.id, 'test');
    const invoice = core.fake.invoices.get(order.invoice_id!)!;
    core.fake.invoices.set(order.invoice_id!, { ...invoice, status: 'partially_refunded', refundedAmount: 500 });
    await core.money.refunds.run();
    expect(core.fake.callsOf('refund').map((c) => (c.arg as { amount: number }).amount)).toEqual([1000]);
    expect(refundRow()).toMatchObject({ state: 'succeeded', amount: 1000 });
  });

  it('an unknown answer is never re-sent: the invoice is read at the next check, and refunded completes it', async () => {
    const order = await paidOrder();
    core.fake.hooks.refund = () => ({ status: 'unknown', detail: 'timeout' });
    core.money.vend.refund(order.id, 'test');
    await core.money.refunds.run();
    expect(refundRow()).toMatchObject({ state: 'unknown', last_error: 'timeout' });
    expect(events('refund.unknown')).toHaveLength(1);
    // Not due yet: nothing is read or sent.
    await core.money.refunds.run();
    expect(core.fake.callsOf('refund')).toHaveLength(1);
    core.clock.advance(Math.max(core.settings.poll.intervalMs, 1_000));
    core.fake.set(order.invoice_id!, 'refunded');
    await core.money.refunds.run();
    expect(core.fake.callsOf('refund')).toHaveLength(1);
    expect(refundRow()).toMatchObject({ state: 'succeeded' });
    expect(core.orders.get(order.id)!.state).toBe('refunded');
  });

  it('a provider that confirms by key (Gerege) is asked again with the same key, not sent a second refund', async () => {
    const order = await paidOrder();
    core.fake.hooks.refund = () => ({ status: 'unknown' });
    const confirmed: unknown[] = [];
    core.fake.hooks.confirmRefund = (request) => {
      confirmed.push(request);
      return { status: 'succeeded', refundId: 're_1' };
    };
    core.money.vend.refund(order.id, 'test');
    await core.money.refunds.run();
    core.clock.advance(Math.max(core.settings.poll.intervalMs, 1_000));
    await core.money.refunds.run();
    expect(confirmed).toEqual([{ invoiceId: order.invoice_id, amount: 1500, idempotencyKey: `${order.reference}-refund` }]);
    expect(core.fake.callsOf('refund')).toHaveLength(1);
    expect(refundRow()).toMatchObject({ state: 'succeeded' });
  });

  it('a refused refund raises refund_failed for a person and is not tried again', async () => {
    const order = await paidOrder();
    core.fake.hooks.refund = () => ({ status: 'failed', detail: 'insufficient balance' });
    core.money.vend.refund(order.id, 'test');
    await core.money.refunds.run();
    core.clock.advance(60_000);
    await core.money.refunds.run();
    expect(core.fake.callsOf('refund')).toHaveLength(1);
    expect(refundRow()).toMatchObject({ state: 'failed', last_error: 'insufficient balance' });
    expect(core.outbox.openAlarms().map((a) => a.name)).toContain(`refund_failed/${order.id}`);
    expect(events('refund.failed')).toHaveLength(1);
  });

  it('an outcome unknown for too long raises refund_unknown once; the completion clears it', async () => {
    const order = await paidOrder();
    core.fake.hooks.refund = () => ({ status: 'unknown' });
    core.money.vend.refund(order.id, 'test');
    await core.money.refunds.run();
    const checkIntervalMs = Math.max(core.settings.poll.intervalMs, 1_000);
    const unknownAlarmMs = core.settings.provider.refundUnknownAlarmSec * 1000;
    for (let waited = 0; waited <= unknownAlarmMs; waited += checkIntervalMs) {
      core.clock.advance(checkIntervalMs);
      await core.money.refunds.run();
    }
    expect(core.outbox.openAlarms().filter((a) => a.name === `refund_unknown/${order.id}`)).toHaveLength(1);
    core.clock.advance(checkIntervalMs);
    core.fake.set(order.invoice_id!, 'refunded');
    await core.money.refunds.run();
    expect(core.outbox.openAlarms().map((a) => a.name)).not.toContain(`refund_unknown/${order.id}`);
    expect(core.fake.callsOf('refund')).toHaveLength(1);
  });

  it('a refund cut off while sending is unknown after recovery, and settled by reading the invoice, not by a second send', async () => {
    const order = await paidOrder();
    core.money.vend.refund(order.id, 'test');
    // The claim committed, then the process died before the provider answered.
    core.db.prepare("UPDATE refunds SET state = 'sending', attempts = 1").run();
    core.fake.set(order.invoice_id!, 'refunded');
    expect(core.money.refunds.recover()).toBe(1);
    expect(refundRow()).toMatchObject({ state: 'unknown', last_error: 'process stopped while sending' });
    await core.money.refunds.run();
    expect(core.fake.callsOf('refund')).toEqual([]);
    expect(refundRow()).toMatchObject({ state: 'succeeded' });
    expect(core.orders.get(order.id)!.state).toBe('refunded');
  });

  it('a void whose cancel leaves the authorization standing waits, and completes when a check reads it canceled', async () => {
    core.close();
    core = buildCore({ provider: { captureMode: 'manual' } });
    const order = await observedOrder(core, 'authorized');
    const cancel = core.fake.provider.cancelInvoice.bind(core.fake.provider);
    let cancels = 0;
    core.fake.provider.cancelInvoice = async (id) => {
      cancels++;
      return { ...(await core.fake.provider.getInvoice(id)) };
    };
    core.money.vend.refund(order.id, 'test');
    await core.money.refunds.run();
    expect(refundRow()).toMatchObject({ kind: 'void', state: 'pending', last_error: 'after cancel the invoice is authorized' });
    core.fake.provider.cancelInvoice = cancel;
    core.fake.set(order.invoice_id!, 'canceled');
    core.clock.advance(Math.max(core.settings.poll.intervalMs, 1_000));
    await core.money.refunds.run();
    expect(cancels).toBe(1);
    expect(refundRow()).toMatchObject({ state: 'succeeded' });
    expect(core.orders.get(order.id)!.state).toBe('refunded');
  });
});
