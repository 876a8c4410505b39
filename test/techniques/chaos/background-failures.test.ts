import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { createApp, type App } from '../../../src/app.js';
import type { Actuator, VendOutcome, VendRequest } from '../../../src/hardware/index.js';
import { createSandboxProvider, type SandboxProvider } from '../../../src/payments/sandbox/index.js';
import { ProviderError, type PaymentProvider } from '../../../src/payments/types.js';
import { systemClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/logger.js';
import { createCheckpointer, createRetention } from '../../../src/store/index.js';
import type { Db } from '../../../src/store/open.js';
import { restartableBroker } from '../../helpers/broker.js';
import { testSettings } from '../../helpers/core.js';
import { tempDir, waitFor } from '../../helpers/temp.js';

/**
 * An outage is a state, not a crash: each background task of the real app (createApp) has its work
 * fail twice in a row, and the process neither rejects unheard nor throws uncaught, and the task runs
 * again by itself and does its work. The failures are injected at the provider boundary: the
 * sandbox provider behind a wrapper that refuses the next N calls of a method as a refused
 * connection would (nothing sent). The sandbox is ours, not the app's, so no webhook is delivered:
 * the poller is the only way the app learns of a payment.
 */

type Faulted = 'getInvoice' | 'listEvents' | 'createInvoice' | 'checkCredentials';

function faultyProvider(inner: PaymentProvider) {
  const pending: Partial<Record<Faulted, number>> = {};
  const thrown: Partial<Record<Faulted, number>> = {};
  const calls: Partial<Record<Faulted, number>> = {};
  const gate = (method: Faulted) => {
    calls[method] = (calls[method] ?? 0) + 1;
    if ((pending[method] ?? 0) > 0) {
      pending[method]! -= 1;
      thrown[method] = (thrown[method] ?? 0) + 1;
      throw new ProviderError('network', `injected: connect ECONNREFUSED (${method})`);
    }
  };
  const provider: PaymentProvider = {
    ...inner,
    createInvoice: async (request) => (gate('createInvoice'), inner.createInvoice(request)),
    getInvoice: async (id) => (gate('getInvoice'), inner.getInvoice(id)),
    cancelInvoice: (id) => inner.cancelInvoice(id),
    captureInvoice: (id) => inner.captureInvoice(id),
    refund: (request) => inner.refund(request),
    verifyWebhook: (body, headers, context) => inner.verifyWebhook(body, headers, context),
    listEvents: async (query) => (gate('listEvents'), inner.listEvents!(query)),
    checkCredentials: async () => (gate('checkCredentials'), inner.checkCredentials()),
  };
  return { provider, pending, thrown, calls };
}

/** An actuator that reports "nothing delivered" while `failing` says so, and delivers otherwise. */
function scriptedActuator(onFailure: () => void) {
  const actuator = {
    kind: 'sim' as const,
    failNext: 0,
    fired: [] as VendRequest[],
    async start() {},
    async fire(request: VendRequest): Promise<VendOutcome> {
      actuator.fired.push(request);
      if (actuator.failNext > 0) {
        actuator.failNext -= 1;
        onFailure();
        return { result: 'failed', reason: 'injected: the machine did not take the vend' };
      }
      return { result: 'vended' };
    },
    health: () => ({ ok: true, detail: 'scripted' }),
    async stop() {},
  } satisfies Actuator & Record<string, unknown>;
  return actuator;
}

/**
 * The next `times` writes matching `when` on `table` fail as a lock another process holds past the
 * busy timeout would (SQLITE_BUSY: the CLI writing, a backup reading): a temporary trigger on the
 * app's own connection calls a function that throws, then lets writes through. Returns how many
 * failed so far.
 */
function failWrites(db: Db, name: string, trigger: string | string[], times: number, code = 'SQLITE_BUSY'): { failed: () => number } {
  let failed = 0;
  db.function(`${name}_fault`, () => {
    if (failed >= times) return 0;
    failed += 1;
    throw Object.assign(new Error(`${code} (injected: ${name})`), { code });
  });
  [trigger].flat().forEach((when, i) => db.exec(`CREATE TEMP TRIGGER ${name}_${i} ${when} BEGIN SELECT ${name}_fault(); END`));
  return { failed: () => failed };
}

describe('every background task survives two failures in a row and runs again', () => {
  let app: App | null = null;
  let sandbox: SandboxProvider | null = null;
  let dir: ReturnType<typeof tempDir> | null = null;
  const crashes: unknown[] = [];
  const onCrash = (err: unknown) => crashes.push(err);

  beforeEach(() => {
    ahead = 0;
    crashes.length = 0;
    process.on('unhandledRejection', onCrash);
    process.on('uncaughtException', onCrash);
  });
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await app?.stop();
    for (const cleanup of cleanups.splice(0)) await cleanup();
    app = null;
    sandbox?.close();
    sandbox = null;
    dir?.cleanup();
    dir = null;
    process.off('unhandledRejection', onCrash);
    process.off('uncaughtException', onCrash);
  });

  // The app's wall clock, which a test may move ahead (the reconciler compares settled sales only).
  let ahead = 0;
  const clock = { now: () => Date.now() + ahead, monotonic: () => performance.now() };

  async function start(
    setup: (faults: ReturnType<typeof faultyProvider>) => void = () => {},
    overrides: Parameters<typeof testSettings>[1] = {},
    patch: (settings: ReturnType<typeof testSettings>) => ReturnType<typeof testSettings> = (settings) => settings,
  ) {
    dir = tempDir();
    sandbox = createSandboxProvider(
      { clock: systemClock, logger: silentLogger() },
      { dbPath: join(dir.path, 'sandbox.db'), payUrl: (id) => `http://127.0.0.1/sandbox/pay/${id}`, webhookSecret: 'bg-secret' },
    );
    const faults = faultyProvider(sandbox.provider);
    setup(faults);
    const actuator = scriptedActuator(() => {
      // The vend failed: the refund worker's first reads of the invoice (before it sends) fail twice.
      faults.pending.getInvoice = 2;
    });
    app = createApp(patch(testSettings(dir.path, { ...overrides, provider: { webhookSecrets: ['bg-secret'] } })), {
      logger: silentLogger(),
      provider: faults.provider,
      actuator,
      clock,
    });
    const { localUrl } = await app.start();
    const order = async () => {
      const response = await fetch(`${localUrl}/api/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"slot":"A1"}',
      });
      return { status: response.status, body: (await response.json()) as { orderId: number; invoiceId: string } };
    };
    return { ctx: app.context(), faults, actuator, order, sandbox };
  }

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
    const { ctx, actuator, order, sandbox } = await start();
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
    const busy = failWrites(ctx.db, 'receipt_claim', "BEFORE UPDATE ON receipts WHEN NEW.state = 'sending'", 2);
    const created = await order();
    await sandbox.payments.pay(created.body.invoiceId);
    await waitFor(() => ctx.orders.get(created.body.orderId)!.state === 'vended', { what: 'vended' });
    const receipt = () =>
      ctx.db.prepare('SELECT state FROM receipts WHERE order_id = ?').get(created.body.orderId) as { state: string } | undefined;
    await waitFor(() => receipt()?.state === 'issued', { what: 'the receipt issued after two refused claims' });
    expect(busy.failed()).toBe(2);
    expect(crashes).toEqual([]);
  });

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
      (settings) => ({ ...settings, dex: { ...settings.dex, readEverySec: 1 } }),
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
    ahead = 10 * 60_000;
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
