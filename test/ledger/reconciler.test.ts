import { afterEach, describe, expect, it } from 'vitest';
import { createReconciler } from '../../src/ledger/index.js';
import { createVendRunner } from '../../src/vend/index.js';
import { buildCore, testMachine, type Core } from '../helpers/core.js';

/** The reconciliation loop: bounded reads, alarms naming the order, silence when nothing is due. */

let core: Core | null = null;
afterEach(() => {
  core?.close();
  core = null;
});

const machine = testMachine('test');

async function vendedOrder(c: Core, slot: string) {
  const order = await c.orders.create({ source: 'kiosk', slot });
  c.fake.set(order.invoice_id!, 'paid');
  await c.observe(order.invoice_id!);
  const vend = createVendRunner(
    {
      db: c.db,
      clock: c.clock,
      logger: c.logger,
      outbox: c.outbox,
      orderRepository: c.orderRepository,
      actuator: machine,
      provider: c.fake.provider,
      ledger: c.ledger,
    },
    { mode: 'vending', vendTimeoutMs: 1_000, notPassedPolicy: 'refund' },
  );
  await vend.run();
  expect(c.orders.get(order.id)!.state).toBe('vended');
  return order;
}

describe('the reconciliation loop', () => {
  it('raises an alarm naming the order when the provider shows a refund nobody here made, within its read budget', async () => {
    const c = (core = buildCore());
    const first = await vendedOrder(c, 'A1');
    const second = await vendedOrder(c, 'A2');
    const reconciler = createReconciler({ ...c, provider: c.fake.provider }, { everyMs: 3_600_000, days: 7, readsPerHour: 1 });
    const reads = () => c.fake.calls.filter((call) => call.method === 'getInvoice').length;

    // Nothing has settled long enough: no provider call at all.
    const before = reads();
    expect(await reconciler.run()).toBe(0);
    expect(reads()).toBe(before);

    // Later the provider says the first sale was never paid (canceled there).
    c.fake.set(first.invoice_id!, 'canceled');
    c.clock.advance(10 * 60_000);
    expect(await reconciler.run()).toBe(1);
    expect(reads()).toBe(before + 1); // the budget: one read this hour
    const alarm = c.outbox.openAlarms().find((a) => a.name === `reconcile/${first.id}`);
    expect(alarm).toBeDefined();
    expect(JSON.parse(alarm!.detail)).toMatchObject({ orderId: first.id, kind: 'vended_not_paid' });

    // An hour on, the second is compared and agrees; the first is still reported.
    c.clock.advance(3_600_000);
    expect(await reconciler.run()).toBe(1);
    expect(c.outbox.openAlarms().map((a) => a.name)).toEqual([`reconcile/${first.id}`]);
    expect(c.orders.get(second.id)!.state).toBe('vended');

    // Compared and unchanged since: nothing is due, no reads.
    const settled = reads();
    c.clock.advance(30 * 60_000);
    await reconciler.run();
    expect(reads()).toBe(settled);
  });

  it('a refund the merchant made after the vend, read by the reconciler: the order ends refunded with one alarm for a person', async () => {
    const c = (core = buildCore());
    const sold = await vendedOrder(c, 'A1');
    const reconciler = createReconciler({ ...c, provider: c.fake.provider }, { everyMs: 3_600_000, days: 7, readsPerHour: 10 });
    c.fake.set(sold.invoice_id!, 'refunded');
    c.clock.advance(10 * 60_000);
    expect(await reconciler.run()).toBe(0);
    expect(c.orders.get(sold.id)!.state).toBe('refunded');
    expect(c.outbox.openAlarms().map((a) => a.name)).toEqual([`refunded_after_vend/${sold.id}`]);
  });

  it('a wall clock set back: the read budget runs on the monotonic clock, and orders updated before the jump are compared, once', async () => {
    const c = (core = buildCore());
    let mono = 0;
    // The service's clock: the wall clock NTP moves, and a monotonic one that only goes forward.
    const clock = { now: () => c.clock.now(), monotonic: () => mono };
    const later = (ms: number) => {
      c.clock.advance(ms);
      mono += ms;
    };
    const first = await vendedOrder(c, 'A1');
    const second = await vendedOrder(c, 'A2');
    const reconciler = createReconciler({ ...c, clock, provider: c.fake.provider }, { everyMs: 3_600_000, days: 7, readsPerHour: 1 });
    const before = c.fake.calls.length;
    const reads = () =>
      c.fake.calls
        .slice(before)
        .filter((call) => call.method === 'getInvoice')
        .map((call) => call.arg);

    later(10 * 60_000);
    await reconciler.run();
    expect(reads()).toEqual([first.invoice_id]);

    // NTP sets the clock back 30 days; an hour passes. Both orders were last updated "in the future".
    c.clock.set(c.clock.now() - 30 * 86_400_000);
    later(3_600_000);
    c.fake.set(second.invoice_id!, 'canceled');
    expect(await reconciler.run()).toBe(1);
    expect(reads()).toEqual([first.invoice_id, second.invoice_id]);
    expect(c.outbox.openAlarms().map((a) => a.name)).toEqual([`reconcile/${second.id}`]);

    // Compared: not read again on every pass while the wall clock is behind their updates.
    later(3_600_000);
    await reconciler.run();
    expect(reads()).toEqual([first.invoice_id, second.invoice_id]);
  });
});
