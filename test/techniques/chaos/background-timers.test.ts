import { describe, expect, it } from 'vitest';
import { createServer, type Socket } from 'node:net';
import { silentLogger } from '../../../src/util/logger.js';
import { createCheckpointer, createRetention } from '../../../src/store/index.js';
import { restartableBroker } from '../../helpers/broker.js';

import { backgroundApp, failWrites } from './background.js';
import { waitFor } from '../../helpers/wait.js';

/** As background-failures.test.ts, for the timers around the money path: the database's, the broker's, the operator's. */
describe('every background task survives two failures in a row and runs again: housekeeping', () => {
  const { start, crashes, cleanups, setAhead } = backgroundApp();

  it('retention: a pruning pass is refused twice, the next pass prunes the old sale', async () => {
    const { ctx, order, sandbox } = await start();
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'vended' });
    const busy = failWrites(ctx.db, 'prune_orders', 'BEFORE DELETE ON orders', 2);
    // A clock far enough ahead that the sale is past retention; passes every 50 ms.
    const later = { now: () => Date.now() + 400 * 86_400_000, monotonic: () => performance.now() };
    const retention = createRetention(
      { db: ctx.db, clock: later, logger: silentLogger() },
      { retentionDays: 30, firstDelayMs: 10, intervalMs: 50 },
    );
    retention.start();
    try {
      await waitFor(
        () => (ctx.db.prepare('SELECT count(*) AS n FROM orders WHERE id = ?').get(created.body.orderId) as { n: number }).n === 0,
        {
          what: 'the old sale pruned after two refused passes',
        },
      );
    } finally {
      await retention.stop();
    }
    expect(busy.failed()).toBe(2);
    expect(crashes).toEqual([]);
  });

  it('the WAL checkpoint: refused twice, the timer keeps going and the next one checkpoints', async () => {
    const { ctx, order } = await start();
    const pragma = ctx.db.pragma.bind(ctx.db);
    let refused = 0;
    ctx.db.pragma = ((source: string, options?: { simple?: boolean }) => {
      if (source.startsWith('wal_checkpoint') && refused < 2) {
        refused += 1;
        throw Object.assign(new Error('database is locked (injected: checkpoint)'), { code: 'SQLITE_BUSY' });
      }
      return pragma(source, options);
    }) as typeof ctx.db.pragma;
    let checkpoints = 0;
    const checkpointer = createCheckpointer(
      { db: ctx.db, logger: silentLogger() },
      { intervalMs: 20, onCheckpoint: () => (checkpoints += 1) },
    );
    checkpointer.start();
    try {
      expect((await order()).status).toBe(201);
      await waitFor(() => refused === 2 && checkpoints > 0, { what: 'a checkpoint after two refusals' });
    } finally {
      checkpointer.stop();
      ctx.db.pragma = pragma;
    }
    expect(crashes).toEqual([]);
  });
  it('the scheduled audit read: refused twice, the schedule keeps going and the next read is taken', async () => {
    const { ctx } = await start(
      () => {},
      {},
      // A read every 100 ms instead of every second at the least (the settings take whole seconds).
      (settings) => ({ ...settings, dex: { ...settings.dex, readEverySec: 0.1 } }),
    );
    const busy = failWrites(ctx.db, 'dex_read', 'BEFORE INSERT ON dex_reads', 2);
    await waitFor(() => (ctx.db.prepare('SELECT count(*) AS n FROM dex_reads').get() as { n: number }).n > 0, {
      what: 'a read after two refusals',
    });
    expect(busy.failed()).toBe(2);
    expect(crashes).toEqual([]);
  });

  it('the MQTT connection and the outbox pump: the broker drops the device twice, it connects again and publishes the sale', async () => {
    const broker = await restartableBroker();
    cleanups.push(() => broker.stop());
    const { ctx, order, sandbox } = await start(() => {}, { mqtt: { url: broker.url, reconnectMinMs: 100, reconnectMaxMs: 200 } });
    await waitFor(() => broker.received.some((m) => m.topic.endsWith('/status') && m.payload === 'online'), { what: 'online' });
    await broker.stop();
    // Where the broker was: something that takes each connection and closes it at once.
    const refused: Socket[] = [];
    const impostor = createServer((socket) => {
      refused.push(socket);
      socket.destroy();
    });
    await new Promise<void>((resolve) => impostor.listen(broker.port, '127.0.0.1', resolve));
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'vended while the broker is away' });
    await waitFor(() => refused.length >= 2, { what: 'two refused connections' });
    await new Promise<void>((resolve) => impostor.close(() => resolve()));
    const before = broker.received.length;
    await broker.start();
    await waitFor(
      () =>
        broker.received
          .slice(before)
          .some((m) => m.payload.includes('vend.succeeded') && m.payload.includes(`"orderId":${created.body.orderId}`)),
      { what: 'the sale published after the reconnect' },
    );
    expect(crashes).toEqual([]);
  });
  it('the reconciler: its pass is refused twice by a held lock, the timer keeps going and the sale is compared', async () => {
    const { ctx, order, sandbox } = await start(
      () => {},
      {},
      // A pass every 120 ms instead of every hour (the settings allow a minute at the least).
      (settings) => ({ ...settings, poll: { ...settings.poll, reconcileEveryMin: 0.002 } }),
    );
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'vended' });
    const busy = failWrites(ctx.db, 'reconciled', 'BEFORE UPDATE OF reconciled_at ON order_invoices WHEN NEW.reconciled_at IS NOT NULL', 2);
    // Ten minutes on: the sale has settled and is due for comparison.
    setAhead(10 * 60_000);
    const compared = () =>
      (
        ctx.db.prepare('SELECT reconciled_at FROM order_invoices WHERE invoice_id = ?').get(created.body.invoiceId) as {
          reconciled_at: number | null;
        }
      ).reconciled_at;
    await waitFor(() => compared() !== null, { what: 'the sale compared after two refused passes' });
    expect(busy.failed()).toBe(2);
    expect(crashes).toEqual([]);
  });
  it('the storage recheck: a full card, its write refused twice, then writable again: the sale goes out and orders are taken', async () => {
    const { ctx, actuator, order, sandbox } = await start();
    // The vend's claim meets a full card: the fault is reported, new orders stop.
    const full = failWrites(ctx.db, 'claim_full', "BEFORE UPDATE ON vend_jobs WHEN NEW.state = 'firing'", 1, 'SQLITE_FULL');
    const probe = failWrites(
      ctx.db,
      'probe_full',
      ["BEFORE INSERT ON meta WHEN NEW.key = 'storage_checked_at'", "BEFORE UPDATE ON meta WHEN NEW.key = 'storage_checked_at'"],
      2,
      'SQLITE_FULL',
    );
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => full.failed() === 1, { what: 'the claim refused by a full card' });
    expect((await order()).status).toBe(503);
    await waitFor(() => probe.failed() === 2, { what: 'two refused rechecks', timeoutMs: 60_000 });
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', {
      what: 'the sale vended once writable',
      timeoutMs: 60_000,
    });
    // Once a second at most: orders are rate-limited per minute.
    await waitFor(async () => (await order()).status === 201, { what: 'orders taken again', intervalMs: 1_000 });
    expect(actuator.fired.map((r) => r.orderId)).toEqual([created.body.orderId]);
    expect(crashes).toEqual([]);
  }, 90_000);
});
