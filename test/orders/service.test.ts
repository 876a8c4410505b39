import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { corePerTest, type Core } from '../helpers/core.js';
import { ProviderError } from '../../src/payments/types.js';
import { VendgateError } from '../../src/util/errors.js';

describe('order service', () => {
  let core: Core;
  corePerTest((c) => (core = c));

  it('writes the order and its idempotency key to disk before calling the provider', async () => {
    let seenOnDisk: unknown;
    core.fake.hooks.beforeCreate = (request) => {
      // A second connection sees only committed data: the key must already be there.
      const other = new Database(core.settings.storage.path, { readonly: true });
      seenOnDisk = other
        .prepare('SELECT state, idempotency_key, reference FROM orders WHERE idempotency_key = ?')
        .get(request.idempotencyKey);
      other.close();
    };
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    expect(seenOnDisk).toEqual({ state: 'creating', idempotency_key: `${order.reference}-pay`, reference: order.reference });
    expect(order.reference).toMatch(/^vm-test-[0-9a-f]{6}-1-[0-9a-f]{8}$/);
    expect(order).toMatchObject({ state: 'awaiting_payment', amount: 1500, slot: 'A1', invoice_id: 'fk_1' });
  });

  it('refuses an unknown slot with a message that lists the slots, and writes nothing', async () => {
    const error = await core.orders.create({ source: 'kiosk', slot: 'Z9' }).catch((e) => e);
    expect(error).toBeInstanceOf(VendgateError);
    expect(error).toMatchObject({ code: 'VG_ERR_UNKNOWN_SLOT', httpStatus: 400 });
    expect(error.message).toContain('A1, A2');
    expect(core.count('SELECT count(*) AS n FROM orders')).toBe(0);
    expect(core.fake.calls).toEqual([]);
  });

  it('a new order while one awaits payment cancels the old one and its invoice', async () => {
    const first = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    const second = await core.orders.create({ source: 'kiosk', slot: 'A2' });
    expect(core.orders.get(first.id)!.state).toBe('canceled');
    expect(core.fake.invoices.get(first.invoice_id!)!.status).toBe('canceled');
    expect(second.state).toBe('awaiting_payment');
  });

  it('answers 409 while an order is being delivered', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.fake.set(order.invoice_id!, 'paid');
    await core.observe(order.invoice_id!);
    await expect(core.orders.create({ source: 'kiosk', slot: 'A2' })).rejects.toMatchObject({
      code: 'VG_ERR_DEVICE_BUSY',
      httpStatus: 409,
    });
  });

  it('two choices at once while an order waits: one replaces it, the other is told to wait; one new invoice', async () => {
    await core.orders.create({ source: 'kiosk', slot: 'A1' });
    const results = await Promise.allSettled([
      core.orders.create({ source: 'kiosk', slot: 'A2' }),
      core.orders.create({ source: 'kiosk', slot: 'A1' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({
      code: 'VG_ERR_DEVICE_BUSY',
      httpStatus: 409,
    });
    expect(core.fake.callsOf('createInvoice')).toHaveLength(2);
    expect(core.count("SELECT count(*) AS n FROM orders WHERE state = 'awaiting_payment'")).toBe(1);
  });

  it('answers 503 while out of service, before touching anything', async () => {
    core.outOfService.set('operator', 'maintenance');
    await expect(core.orders.create({ source: 'kiosk', slot: 'A1' })).rejects.toMatchObject({
      code: 'VG_ERR_OUT_OF_SERVICE',
      httpStatus: 503,
    });
    expect(core.count('SELECT count(*) AS n FROM orders')).toBe(0);
  });

  it('fails the order and never shows a QR when the provider keeps returning an invoice for something else', async () => {
    const keys: string[] = [];
    core.fake.hooks.beforeCreate = (request) => {
      keys.push(request.idempotencyKey);
    };
    core.fake.hooks.transformCreate = (invoice) => ({ ...invoice, amount: invoice.amount + 1 });
    await expect(core.orders.create({ source: 'kiosk', slot: 'A1' })).rejects.toMatchObject({ code: 'VG_ERR_INVOICE_MISMATCH' });
    const order = core.orders.get(1)!;
    expect(order).toMatchObject({ state: 'failed', invoice_id: null, pay_url: null, error_code: 'VG_ERR_INVOICE_MISMATCH' });
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual(['invoice_reused/1']);
    // Each attempt had a key of its own, derived from the order.
    expect(keys).toEqual([`${order.reference}-pay`, `${order.reference}-pay-2`, `${order.reference}-pay-3`]);
  });

  it("an answer under the order's own key that is already paid is ours: vended, with an alarm, and no second attempt", async () => {
    const keys: string[] = [];
    core.fake.hooks.beforeCreate = (request) => {
      keys.push(request.idempotencyKey);
    };
    core.fake.hooks.transformCreate = (invoice) => ({ ...invoice, status: 'paid', providerStatus: 'succeeded', replayed: true });
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    expect(order).toMatchObject({ attempt: 1, idempotency_key: `${order.reference}-pay` });
    expect(['paid', 'vending', 'vended']).toContain(order.state);
    expect(keys).toEqual([`${order.reference}-pay`]);
    expect(core.count('SELECT count(*) AS n FROM vend_jobs WHERE order_id = 1')).toBe(1);
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual([`invoice_recovered/${order.id}`]);
  });

  it("an answer under the order's own key paid long after its QR expired is refunded, with an alarm, never vended", async () => {
    // The create is answered ten minutes after the order was written (a resume long after a cut):
    // its QR expired eight minutes ago and the customer paid before that.
    const orderedAt = core.clock.now();
    core.fake.hooks.beforeCreate = () => core.clock.advance(10 * 60_000);
    core.fake.hooks.transformCreate = (invoice) => ({
      ...invoice,
      status: 'paid',
      providerStatus: 'succeeded',
      replayed: true,
      expiresAt: orderedAt + 120_000,
    });
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    expect(['refunding', 'refunded']).toContain(order.state);
    expect(core.count('SELECT count(*) AS n FROM vend_jobs')).toBe(0);
    expect(core.count('SELECT count(*) AS n FROM refunds WHERE order_id = 1')).toBe(1);
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual([`invoice_recovered/${order.id}`]);
  });

  it('an idempotency conflict fails the order and raises an alarm', async () => {
    core.fake.hooks.beforeCreate = () => {
      throw new ProviderError('conflict', 'key reused', { httpStatus: 409, providerCode: 'idempotency_conflict' });
    };
    await expect(core.orders.create({ source: 'kiosk', slot: 'A1' })).rejects.toMatchObject({ code: 'VG_ERR_IDEMPOTENCY_CONFLICT' });
    expect(core.orders.get(1)!.state).toBe('failed');
    expect(core.outbox.openAlarms().map((a) => a.name)).toContain('idempotency_conflict');
  });

  it('an unreachable provider fails the order with a retry-later message and marks the device offline', async () => {
    core.fake.hooks.beforeCreate = () => {
      throw new ProviderError('network', 'ECONNREFUSED');
    };
    await expect(core.orders.create({ source: 'kiosk', slot: 'A1' })).rejects.toMatchObject({
      code: 'VG_ERR_PROVIDER_UNAVAILABLE',
      httpStatus: 503,
    });
    expect(core.health.reachable).toBe(false);
    await expect(core.orders.create({ source: 'kiosk', slot: 'A1' })).rejects.toMatchObject({ code: 'VG_ERR_PROVIDER_UNAVAILABLE' });
    expect(core.count('SELECT count(*) AS n FROM orders')).toBe(1);
  });

  it('expires an unpaid order after its TTL and cancels the invoice', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.clock.advance(121_000);
    await core.orders.expireDue();
    expect(core.orders.get(order.id)!.state).toBe('expired');
    expect(core.fake.callsOf('cancelInvoice')).toHaveLength(1);
  });

  it('vends a payment made in the last second before expiry instead of refunding it', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.fake.set(order.invoice_id!, 'paid');
    core.clock.advance(121_000);
    await core.orders.expireDue();
    expect(core.orders.get(order.id)!.state).toBe('paid');
    expect(core.count('SELECT count(*) AS n FROM vend_jobs')).toBe(1);
    expect(core.fake.callsOf('cancelInvoice')).toHaveLength(0);
  });

  it('an order left in creating by a crash gets its invoice with the same key on restart, not a second invoice', async () => {
    // The crash: the provider created the invoice but the answer never reached the database.
    core.fake.hooks.beforeCreate = () => {};
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.db.prepare("UPDATE orders SET state = 'creating', invoice_id = NULL, pay_url = NULL WHERE id = ?").run(order.id);
    core.db.prepare('DELETE FROM order_invoices').run();
    await core.orders.recover();
    const recovered = core.orders.get(order.id)!;
    expect(recovered).toMatchObject({ state: 'awaiting_payment', invoice_id: order.invoice_id });
    const keys = core.fake.callsOf('createInvoice').map((c) => (c.arg as { idempotencyKey: string }).idempotencyKey);
    expect(keys).toEqual([`${order.reference}-pay`, `${order.reference}-pay`]);
    expect(core.fake.invoices.size).toBe(1);
  });
});
