import { describe, expect, it } from 'vitest';

import { backgroundApp, failWrites } from './background.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * An outage is a state, not a crash: each background task of the real app (createApp) has its work
 * fail twice in a row, and the process neither rejects unheard nor throws uncaught, and the task runs
 * again by itself and does its work. The failures are injected at the provider boundary: the
 * sandbox provider behind a wrapper that refuses the next N calls of a method as a refused
 * connection would (nothing sent). The sandbox is ours, not the app's, so no webhook is delivered:
 * the poller is the only way the app learns of a payment.
 */

describe('every background task survives two failures in a row and runs again: the money path', () => {
  const { start, crashes } = backgroundApp();

  it('the poller: two failed reads of a paid invoice, then it reads again and the order is vended', async () => {
    const { ctx, faults, actuator, order, sandbox } = await start();
    const created = await order();
    expect(created.status).toBe(201);
    faults.pending.getInvoice = 2;
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'the order vended after two failed reads' });
    expect(faults.thrown.getInvoice).toBe(2);
    expect(actuator.fired.map((r) => r.orderId)).toEqual([created.body.orderId]);
    expect(crashes).toEqual([]);
  });

  it('the refund worker: a vend that failed, two failed reads before the refund, then the refund is sent', async () => {
    const { ctx, faults, actuator, order, sandbox } = await start();
    actuator.failNext = 1;
    const created = await order();
    expect(created.status).toBe(201);
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'refunded', {
      what: 'the order refunded after two failed reads',
      timeoutMs: 60_000,
    });
    expect(faults.thrown.getInvoice).toBe(2);
    // The money went back at the provider, once, and nothing was vended.
    expect((await sandbox.provider.getInvoice(created.body.invoiceId)).status).toBe('refunded');
    const refunds = ctx.db.prepare('SELECT state FROM refunds WHERE invoice_id = ?').all(created.body.invoiceId);
    expect(refunds).toEqual([{ state: 'succeeded' }]);
    expect(actuator.fired).toHaveLength(1);
    expect(crashes).toEqual([]);
  });

  it('the Events API catch-up: the start-up read fails twice, the app stays up and catches up on its own', async () => {
    const { ctx, faults, order, sandbox } = await start((f) => {
      f.pending.listEvents = 2;
      f.pending.checkCredentials = 2;
    });
    await ctx.webhooks.backfill.caughtUp();
    expect(faults.thrown.listEvents).toBe(2);
    expect(faults.calls.listEvents).toBeGreaterThanOrEqual(3);
    // Still selling after the outage.
    const created = await order();
    expect(created.status).toBe(201);
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'a sale after the outage' });
    expect(crashes).toEqual([]);
  }, 90_000);
  it('the housekeeping tick: the catalog read fails twice (a table gone), the service stays up, reads again and sells', async () => {
    const { ctx, order, sandbox } = await start();
    const read = ctx.catalog.generation;
    const seen = { calls: 0, threw: 0, afterRestore: 0 };
    let restored = false;
    ctx.catalog.generation = () => {
      seen.calls += 1;
      if (restored) seen.afterRestore += 1;
      try {
        return read();
      } catch (err) {
        seen.threw += 1;
        throw err;
      }
    };
    // A read the card cannot answer: the table the tick reads is not there for two ticks.
    ctx.db.exec('ALTER TABLE slot_state RENAME TO slot_state_aside');
    await waitFor(() => seen.threw >= 2, { what: 'two failed catalog reads' });
    ctx.db.exec('ALTER TABLE slot_state_aside RENAME TO slot_state');
    restored = true;
    await waitFor(() => seen.afterRestore >= 2, { what: 'the tick reading again' });
    const created = await order();
    expect(created.status).toBe(201);
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'a sale after the failed reads' });
    expect(crashes).toEqual([]);
  });
  it('the vend runner: its claim is refused twice by a held lock, the process stays up, the next pass vends once', async () => {
    const { ctx, actuator, order, sandbox } = await start();
    const busy = failWrites(ctx.db, 'vend_claim', "BEFORE UPDATE ON vend_jobs WHEN NEW.state = 'firing'", 2);
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'vended after two refused claims' });
    expect(busy.failed()).toBe(2);
    expect(actuator.fired.map((r) => r.orderId)).toEqual([created.body.orderId]);
    expect(crashes).toEqual([]);
  });

  it('the refund worker: its claim is refused twice by a held lock, the process stays up, the refund goes once', async () => {
    const { ctx, actuator, order, sandbox } = await start();
    const busy = failWrites(ctx.db, 'refund_claim', "BEFORE UPDATE ON refunds WHEN NEW.state = 'sending'", 2);
    actuator.failNext = 1;
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'refunded', { what: 'refunded after two refused claims' });
    expect(busy.failed()).toBe(2);
    expect(ctx.db.prepare('SELECT state, attempts FROM refunds').all()).toEqual([{ state: 'succeeded', attempts: 1 }]);
    expect(crashes).toEqual([]);
  });
  it('the webhook inbox worker: marking an event done is refused twice, the process stays up, the event ends processed', async () => {
    const { ctx, actuator, order, sandbox } = await start(
      () => {},
      {},
      // A failed pass is tried again after 50 ms instead of the default second (the settings allow 10 ms).
      (settings) => ({ ...settings, http: { ...settings.http, webhook: { ...settings.http.webhook, retryBaseMs: 50 } } }),
    );
    sandbox.onDelivery((delivery) => ctx.webhooks.deliverLocally(delivery));
    const busy = failWrites(ctx.db, 'inbox_done', 'BEFORE UPDATE ON webhook_events WHEN NEW.processed_at IS NOT NULL', 2);
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'vended' });
    const paidEvent = () =>
      ctx.db
        .prepare("SELECT processed_at FROM webhook_events WHERE object_id = ? AND source = 'webhook' AND type LIKE '%paid%'")
        .get(created.body.invoiceId) as { processed_at: number | null } | undefined;
    await waitFor(() => busy.failed() >= 2 && paidEvent()?.processed_at, { what: 'the paid event processed after two refusals' });
    expect(busy.failed()).toBe(2);
    expect(actuator.fired).toHaveLength(1);
    expect(crashes).toEqual([]);
  });
  it('the fiscal worker: the receipt claim is refused twice, the process stays up, the receipt is issued', async () => {
    const { ctx, order, sandbox } = await start(() => {}, { fiscal: { register: 'sandbox', intervalMs: 50 } });
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'vended' });
    const receipt = (kind: string) =>
      ctx.db.prepare('SELECT state FROM receipts WHERE order_id = ? AND kind = ?').get(created.body.orderId, kind) as
        { state: string } | undefined;
    // The sale's first call is claimed in the vend's settle commit; the return of its refund is
    // claimed by the worker in a commit of its own, and that claim is refused twice.
    await waitFor(() => receipt('sale')?.state === 'issued', { what: 'the sale receipt issued' });
    const busy = failWrites(ctx.db, 'receipt_claim', "BEFORE UPDATE ON receipts WHEN NEW.state = 'sending'", 2);
    ctx.vend.refund(created.body.orderId, 'test');
    await waitFor(() => receipt('return')?.state === 'issued', { what: 'the return issued after two refused claims', timeoutMs: 60_000 });
    expect(busy.failed()).toBe(2);
    expect(crashes).toEqual([]);
  });
});
