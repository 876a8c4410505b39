import { describe, expect, it } from 'vitest';
import { corePerTest, type Core } from '../helpers/core.js';

describe('ledger.observe', () => {
  let core: Core;
  corePerTest((c) => (core = c));

  /** A provider's reading of `invoiceId`: paid 1500 MNT, by webhook, not live, but for `over`. */
  const reading = (invoiceId: string, over: Partial<Parameters<Core['ledger']['observe']>[0]> = {}) => ({
    invoiceId,
    status: 'paid' as const,
    providerStatus: 'paid',
    livemode: false,
    amount: 1500,
    currency: 'MNT',
    channel: 'webhook' as const,
    ...over,
  });
  const vendJobs = () => core.count('SELECT count(*) AS n FROM vend_jobs');
  const refunds = () => core.count('SELECT count(*) AS n FROM refunds');

  it('a webhook and a poll observing the same payment queue one vend, in either order', async () => {
    for (const first of ['webhook', 'poll'] as const) {
      const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
      core.fake.set(order.invoice_id!, 'paid');
      const second = first === 'webhook' ? 'poll' : 'webhook';
      const a = await core.observe(order.invoice_id!, first);
      const b = await core.observe(order.invoice_id!, second);
      expect(a).toMatchObject({ outcome: 'recorded', to: 'paid', vendQueued: true });
      expect(b).toEqual({ outcome: 'duplicate', orderId: order.id });
      expect(core.count('SELECT count(*) AS n FROM vend_jobs WHERE order_id = ?', order.id)).toBe(1);
      // Free the device for the next round.
      core.db.prepare("UPDATE orders SET state = 'vended' WHERE id = ?").run(order.id);
    }
    expect(vendJobs()).toBe(2);
  });

  it('a late pending after paid changes nothing', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.fake.set(order.invoice_id!, 'paid');
    await core.observe(order.invoice_id!);
    const before = core.orders.get(order.id)!;
    // The pending row was already recorded at create time; a second pending is a duplicate, and a
    // fresh "pending" from a stale event cannot move a paid order.
    const result = core.ledger.observe(reading(order.invoice_id!, { status: 'pending', providerStatus: 'claimed' }));
    expect(result.outcome).toBe('duplicate');
    core.db.prepare("DELETE FROM invoice_status_ledger WHERE status = 'pending'").run();
    const fresh = core.ledger.observe(reading(order.invoice_id!, { status: 'pending', providerStatus: 'claimed' }));
    expect(fresh).toMatchObject({ outcome: 'recorded', to: null, vendQueued: false });
    expect(core.orders.get(order.id)!.state).toBe(before.state);
    expect(vendJobs()).toBe(1);
  });

  it('a paid observation for an order of the other livemode vends nothing and writes nothing', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    const ledgerRows = core.count('SELECT count(*) AS n FROM invoice_status_ledger');
    const result = core.ledger.observe(reading(order.invoice_id!, { providerStatus: 'succeeded', livemode: true }));
    expect(result).toEqual({ outcome: 'rejected', reason: 'livemode_mismatch', orderId: order.id });
    expect(core.orders.get(order.id)!.state).toBe('awaiting_payment');
    expect(vendJobs()).toBe(0);
    expect(core.count('SELECT count(*) AS n FROM invoice_status_ledger')).toBe(ledgerRows);
  });

  it('a payment of the wrong amount vends nothing, is refunded in full and raises an alarm', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A2' });
    const result = core.ledger.observe(reading(order.invoice_id!, { amount: 1, channel: 'poll' }));
    expect(result).toMatchObject({ outcome: 'recorded', to: 'refunding', vendQueued: false, refundQueued: true });
    expect(vendJobs()).toBe(0);
    expect(core.db.prepare('SELECT amount, kind FROM refunds').get()).toEqual({ amount: 1, kind: 'refund' });
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual([`payment_mismatch/${order.id}`]);
  });

  it('a payment after the order was canceled is refunded, never vended', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    await core.orders.cancel(order.id);
    expect(core.orders.get(order.id)!.state).toBe('canceled');
    core.fake.set(order.invoice_id!, 'paid');
    const result = await core.observe(order.invoice_id!, 'webhook');
    expect(result).toMatchObject({ outcome: 'recorded', from: 'canceled', to: 'refunding', vendQueued: false, refundQueued: true });
    expect(vendJobs()).toBe(0);
    const refund = core.db.prepare('SELECT * FROM refunds').get() as { idempotency_key: string; kind: string; amount: number };
    expect(refund).toMatchObject({ idempotency_key: `${order.reference}-refund`, kind: 'refund', amount: 1500 });
    // The same late payment seen again by the other channel queues nothing more.
    await core.observe(order.invoice_id!, 'poll');
    expect(refunds()).toBe(1);
  });

  it('an invoice this device does not know is acknowledged without a write', () => {
    const result = core.ledger.observe(reading('pi_other_device', { providerStatus: 'succeeded' }));
    expect(result).toEqual({ outcome: 'unknown_invoice' });
    expect(core.count('SELECT count(*) AS n FROM invoice_status_ledger')).toBe(0);
  });

  it('a second paid invoice of an order that was already vended is refunded, not vended again', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.fake.set(order.invoice_id!, 'paid');
    await core.observe(order.invoice_id!);
    core.db.prepare("UPDATE orders SET state = 'vended' WHERE id = ?").run(order.id);
    // An earlier attempt's invoice of the same order (attempt 1 replaced by attempt 2).
    core.db.prepare('INSERT INTO order_invoices (invoice_id, order_id, attempt, created_at) VALUES (?, ?, 2, 0)').run('fk_old', order.id);
    core.db.prepare("UPDATE order_invoices SET attempt = 1 WHERE invoice_id = 'fk_old'").run();
    const result = core.ledger.observe(reading('fk_old'));
    expect(result).toMatchObject({ outcome: 'recorded', vendQueued: false, refundQueued: true });
    expect(vendJobs()).toBe(1);
    expect(core.db.prepare('SELECT invoice_id, kind FROM refunds').all()).toEqual([{ invoice_id: 'fk_old', kind: 'refund' }]);
    expect(core.orders.get(order.id)!.state).toBe('vended');
  });

  it('every recorded observation writes its outbox event in the same transaction', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.fake.set(order.invoice_id!, 'paid');
    await core.observe(order.invoice_id!, 'webhook');
    const types = core.outbox.pending(100).map((r) => JSON.parse(r.payload).type);
    expect(types).toEqual(['order.created', 'invoice.created', 'payment.observed', 'payment.observed', 'vend.queued']);
  });
});
