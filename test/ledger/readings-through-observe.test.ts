import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCore, type Core } from '../helpers/core.js';

/**
 * A reading of the provider moves an order only through the ledger's observe(): the reading is on
 * record (invoice_status_ledger) beside the move it caused, whichever part of the service made it.
 * Before, the cancel answer, the read of an interrupted vend and a void's cancel answer moved the
 * order directly, and the last two were not recorded at all.
 */
describe('every reading that moves an order goes through observe()', () => {
  let core: Core;
  beforeEach(() => {
    core = buildCore();
  });
  afterEach(() => core.close());

  const readings = (invoiceId: string) =>
    core.db.prepare('SELECT status, channel FROM invoice_status_ledger WHERE invoice_id = ? ORDER BY rowid').all(invoiceId);
  const history = (orderId: number) => core.orders.history(orderId).map((h) => [h.from, h.to, h.reason]);

  async function paidOrder() {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.fake.set(order.invoice_id!, 'paid');
    await core.observe(order.invoice_id!);
    return order;
  }

  it('a vend interrupted by a restart whose invoice is refunded: the read is recorded and the ledger settles it', async () => {
    const order = await paidOrder();
    core.db.prepare("UPDATE vend_jobs SET state = 'firing' WHERE order_id = ?").run(order.id);
    core.db.prepare("UPDATE orders SET state = 'vending' WHERE id = ?").run(order.id);
    core.fake.set(order.invoice_id!, 'refunded');

    const recovered = await core.money.vend.recover();

    expect(recovered.settled).toEqual([order.id]);
    expect(core.orders.get(order.id)!.state).toBe('refunded');
    expect(readings(order.invoice_id!)).toContainEqual({ status: 'refunded', channel: 'recovery' });
    expect(history(order.id).at(-1)).toEqual(['vending', 'refunded', 'interrupted vend: the invoice is already refunded at the provider']);
    expect(core.db.prepare('SELECT state, outcome, detail FROM vend_jobs WHERE order_id = ?').get(order.id)).toEqual({
      state: 'failed',
      outcome: 'refunded_at_provider',
      detail: 'the invoice is already refunded at the provider',
    });
    expect(core.fired).toHaveLength(0);
  });

  it('an interrupted vend whose invoice still reads paid is parked for a person, never refunded', async () => {
    const order = await paidOrder();
    core.db.prepare("UPDATE vend_jobs SET state = 'firing' WHERE order_id = ?").run(order.id);
    core.db.prepare("UPDATE orders SET state = 'vending' WHERE id = ?").run(order.id);

    const recovered = await core.money.vend.recover();

    expect(recovered.uncertain).toEqual([order.id]);
    expect(core.orders.get(order.id)!.state).toBe('vend_uncertain');
    expect(core.count('SELECT count(*) AS n FROM refunds')).toBe(0);
  });

  it("the customer's cancel: the provider's answer is recorded and closes the order with the customer's reason", async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    const canceled = await core.orders.cancel(order.id, 'customer');
    expect(canceled.state).toBe('canceled');
    expect(readings(order.invoice_id!)).toEqual([
      { status: 'pending', channel: 'create' },
      { status: 'canceled', channel: 'cancel' },
    ]);
    expect(history(order.id).at(-1)).toEqual(['awaiting_payment', 'canceled', 'canceled by customer']);
    const events = (core.db.prepare("SELECT payload FROM outbox WHERE kind = 'event' ORDER BY seq").all() as { payload: string }[]).map(
      (row) => JSON.parse(row.payload) as { type: string },
    );
    expect(events.filter((e) => e.type === 'order.canceled')).toEqual([
      expect.objectContaining({ orderId: order.id, reference: order.reference, reason: 'canceled by customer' }),
    ]);
  });

  it('a void whose cancel answers canceled: the answer is recorded and the order is refunded once', async () => {
    const c = core;
    c.close();
    core = buildCore({ provider: { captureMode: 'manual' } });
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.fake.set(order.invoice_id!, 'authorized');
    await core.observe(order.invoice_id!);
    // The operator gives the money back before the vend: a held authorization is voided.
    core.money.vend.refund(order.id, 'test');
    await core.money.refunds.run();

    expect(core.orders.get(order.id)!.state).toBe('refunded');
    expect(core.db.prepare('SELECT kind, state FROM refunds').all()).toEqual([{ kind: 'void', state: 'succeeded' }]);
    expect(readings(order.invoice_id!)).toContainEqual({ status: 'canceled', channel: 'refund' });
    expect(history(order.id).at(-1)).toEqual(['refunding', 'refunded', 'authorization canceled']);
    expect(core.fake.callsOf('cancelInvoice')).toHaveLength(1);
  });

  it('a refund whose "refunded" a webhook recorded first is still completed by the worker’s own read', async () => {
    const order = await paidOrder();
    core.fake.hooks.refund = () => ({ status: 'unknown' });
    core.money.vend.refund(order.id, 'test');
    await core.money.refunds.run();
    expect(core.db.prepare('SELECT state FROM refunds').get()).toEqual({ state: 'unknown' });
    // The money did move; a webhook brings the news before the worker checks.
    core.fake.set(order.invoice_id!, 'refunded');
    await core.observe(order.invoice_id!, 'webhook');
    expect(core.orders.get(order.id)!.state).toBe('refunding');
    core.clock.advance(1_000);
    await core.money.refunds.run();
    expect(core.orders.get(order.id)!.state).toBe('refunded');
    expect(core.db.prepare('SELECT state FROM refunds').get()).toEqual({ state: 'succeeded' });
    expect(core.fake.callsOf('refund')).toHaveLength(1);
  });
});

describe('where orders move', () => {
  const root = join(import.meta.dirname, '../../src');
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
    });

  it('only orders/transitions.ts calls the repository’s transition(); only the ledger applies a reading’s decision', () => {
    const calling = (pattern: RegExp) =>
      files(root)
        .filter((path) => pattern.test(readFileSync(path, 'utf8')))
        .map((path) => path.slice(root.length + 1))
        .sort();
    expect(calling(/\.transition\(/)).toEqual(['orders/transitions.ts']);
    expect(calling(/\.byReading\(/)).toEqual(['ledger/ledger.ts']);
  });
});
