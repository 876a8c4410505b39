import { describe, expect, it, vi } from 'vitest';
import { ProviderError, type WebhookEvent } from '../../src/payments/types.js';
import { createOrderRepository } from '../../src/orders/index.js';
import { createWebhookInbox, createWebhookWorker, type WebhookWorkerSettings } from '../../src/channels/webhook/index.js';
import { coreOnFakeTimeouts, type Core } from '../helpers/core.js';

const SETTINGS: WebhookWorkerSettings = { retryBaseMs: 1_000, retryMaxMs: 60_000, alarmAfterAttempts: 3 };

describe('webhook worker', () => {
  let core: Core;
  // The worker schedules retries with setTimeout; fake timers keep every pass under the test's control.
  coreOnFakeTimeouts((c) => (core = c));

  function setup(options: { knowsInvoice?: boolean } = {}) {
    const inbox = createWebhookInbox(core.db);
    const orders = createOrderRepository({ db: core.db, clock: core.clock });
    const worker = createWebhookWorker(
      {
        db: core.db,
        clock: core.clock,
        logger: core.logger,
        provider: core.fake.provider,
        ledger: core.ledger,
        outbox: core.outbox,
        inbox,
        ...(options.knowsInvoice === false ? {} : { knowsInvoice: (id: string) => orders.getByInvoice(id) !== undefined }),
      },
      SETTINGS,
    );
    const add = (eventId: string, objectId: string | null, type = 'invoice.paid', source: 'webhook' | 'backfill' = 'webhook') => {
      const event: WebhookEvent = { eventId, type, objectId, livemode: false, createdAt: null };
      // The body claims success; the worker must not believe it.
      return inbox.add(
        event,
        Buffer.from(JSON.stringify({ id: eventId, type, data: { object: { id: objectId, status: 'paid' } } })),
        'sandbox',
        source,
        core.clock.now(),
      );
    };
    const row = (eventId: string) => core.db.prepare('SELECT * FROM webhook_events WHERE event_id = ?').get(eventId) as Record<string, any>;
    const ledgerRows = (invoiceId: string) =>
      core.db.prepare('SELECT status, channel, evidence FROM invoice_status_ledger WHERE invoice_id = ? ORDER BY rowid').all(invoiceId) as {
        status: string;
        channel: string;
        evidence: string;
      }[];
    const pass = async () => {
      worker.notify();
      await worker.idle();
    };
    return { inbox, worker, add, row, ledgerRows, pass };
  }

  async function newOrder() {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    return order.invoice_id!;
  }

  it('re-reads the invoice, observes it once with channel webhook and the event id, and marks the row processed', async () => {
    const { worker, add, row, ledgerRows } = setup();
    const invoiceId = await newOrder();
    core.fake.set(invoiceId, 'paid');
    add('evt_paid', invoiceId);
    worker.start();
    await worker.idle();
    expect(row('evt_paid').processed_at).toBe(core.clock.now());
    const paid = ledgerRows(invoiceId).find((r) => r.status === 'paid')!;
    expect(paid.channel).toBe('webhook');
    expect(JSON.parse(paid.evidence).eventId).toBe('evt_paid');
    expect(core.count("SELECT count(*) AS n FROM vend_jobs WHERE state = 'queued'")).toBe(1);
    await worker.stop();
  });

  it("never trusts the event body's status: the current state from the GET decides", async () => {
    const { worker, add, row, ledgerRows } = setup();
    const invoiceId = await newOrder();
    add('evt_claims_paid', invoiceId);
    worker.start();
    await worker.idle();
    expect(row('evt_claims_paid').processed_at).not.toBeNull();
    expect(ledgerRows(invoiceId).map((r) => r.status)).toEqual(['pending']);
    expect(core.count('SELECT count(*) AS n FROM vend_jobs')).toBe(0);
    await worker.stop();
  });

  it('processes rows a crash left unprocessed when it starts, oldest first, with the channel of their source', async () => {
    const invoiceId = await newOrder();
    core.fake.set(invoiceId, 'paid');
    const first = setup();
    first.add('evt_backfilled', invoiceId, 'invoice.paid', 'backfill');
    core.clock.advance(10);
    first.add('evt_delivered', invoiceId);
    // A new worker over the same database: the previous process died before processing anything.
    const { worker, row, ledgerRows } = setup();
    worker.start();
    await worker.idle();
    expect(row('evt_backfilled').processed_at).not.toBeNull();
    expect(row('evt_delivered').processed_at).not.toBeNull();
    expect(ledgerRows(invoiceId).find((r) => r.status === 'paid')!.channel).toBe('backfill');
    expect(core.count('SELECT count(*) AS n FROM vend_jobs')).toBe(1);
    await worker.stop();
  });

  it('backs a failing row off on its own, raises webhook_stuck after N failures without holding up other rows, and clears it on success', async () => {
    const { worker, add, row, pass } = setup();
    const stuck = await newOrder();
    const healthy = await newOrder();
    core.fake.set(healthy, 'paid');
    core.fake.hooks.getError = (id) => (id === stuck ? new ProviderError('server', 'HTTP 503', { httpStatus: 503 }) : undefined);
    add('evt_stuck', stuck);
    add('evt_healthy', healthy);
    worker.start();
    await worker.idle();
    expect(row('evt_healthy').processed_at).not.toBeNull();
    expect(row('evt_stuck')).toMatchObject({
      processed_at: null,
      attempts: 1,
      next_attempt_at: core.clock.now() + 1_000,
      last_error: 'HTTP 503',
    });

    // Not due yet: nothing happens.
    await pass();
    expect(row('evt_stuck').attempts).toBe(1);
    const waits: number[] = [];
    for (let attempt = 2; attempt <= SETTINGS.alarmAfterAttempts; attempt += 1) {
      const before = core.clock.now();
      core.clock.set(row('evt_stuck').next_attempt_at);
      waits.push(core.clock.now() - before);
      await pass();
      expect(row('evt_stuck').attempts).toBe(attempt);
    }
    expect(waits).toEqual([1_000, 2_000]);
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual(['webhook_stuck/evt_stuck']);

    core.fake.hooks.getError = undefined;
    core.clock.set(row('evt_stuck').next_attempt_at);
    await pass();
    expect(row('evt_stuck').processed_at).not.toBeNull();
    expect(core.outbox.openAlarms()).toEqual([]);
    await worker.stop();
  });

  it('a retry scheduled before the wall clock was set back is due at once; a retry within its backoff still waits', async () => {
    const { worker, add, row } = setup();
    const jumped = await newOrder();
    const backingOff = await newOrder();
    core.fake.set(jumped, 'paid');
    core.fake.set(backingOff, 'paid');
    add('evt_before_jump', jumped);
    add('evt_backing_off', backingOff);
    // As a failed attempt leaves them: the first written 30 days ahead of the clock as it is now (set
    // back by NTP since), the second half a backoff ahead.
    const reschedule = core.db.prepare('UPDATE webhook_events SET attempts = 1, next_attempt_at = ? WHERE event_id = ?');
    reschedule.run(core.clock.now() + 30 * 86_400_000, 'evt_before_jump');
    reschedule.run(core.clock.now() + SETTINGS.retryMaxMs / 2, 'evt_backing_off');
    worker.start();
    await worker.idle();
    expect(row('evt_before_jump').processed_at).toBe(core.clock.now());
    expect(row('evt_backing_off').processed_at).toBeNull();
    expect(core.fake.callsOf('getInvoice').map((c) => c.arg)).toEqual([jumped]);
    await worker.stop();
  });

  it('acknowledges and ignores events for invoices this device does not know, without a GET', async () => {
    const { worker, add, row } = setup();
    add('evt_other_device', 'fk_of_another_device');
    worker.start();
    await worker.idle();
    expect(row('evt_other_device')).toMatchObject({ last_error: 'not an invoice of this device' });
    expect(row('evt_other_device').processed_at).not.toBeNull();
    expect(core.fake.callsOf('getInvoice')).toEqual([]);
    await worker.stop();
  });

  it("an inbox that knows the device's invoices stores another device's event already processed, so the worker never sees it", async () => {
    const orders = createOrderRepository({ db: core.db, clock: core.clock });
    const inbox = createWebhookInbox(core.db, { knowsInvoice: (id) => orders.getByInvoice(id) !== undefined });
    const { row } = setup();
    const own = await newOrder();
    const store = (eventId: string, objectId: string, type = 'invoice.paid') =>
      inbox.add({ eventId, type, objectId, livemode: false, createdAt: null }, Buffer.from('{}'), 'sandbox', 'webhook', core.clock.now());
    expect(store('evt_foreign', 'fk_of_another_device')).toEqual({ inserted: true, handled: false });
    expect(store('evt_own', own)).toEqual({ inserted: true, handled: true });
    expect(store('evt_other_type', own, 'customer.updated')).toEqual({ inserted: true, handled: false });
    expect(row('evt_foreign')).toMatchObject({ processed_at: core.clock.now(), last_error: 'not an invoice of this device' });
    expect(row('evt_own')).toMatchObject({ processed_at: null, last_error: null });
    expect(row('evt_other_type')).toMatchObject({ processed_at: core.clock.now(), last_error: null });
    expect(inbox.due(core.clock.now(), 10, SETTINGS.retryMaxMs).map((r) => r.event_id)).toEqual(['evt_own']);
  });

  it('without the local check, the ledger rejects an unknown invoice and the event is still acknowledged', async () => {
    const { worker, add, row } = setup({ knowsInvoice: false });
    const other = await newOrder();
    core.db.prepare('DELETE FROM order_invoices WHERE invoice_id = ?').run(other);
    add('evt_unknown', other);
    worker.start();
    await worker.idle();
    expect(row('evt_unknown')).toMatchObject({ last_error: 'not an invoice of this device' });
    expect(core.fake.callsOf('getInvoice').map((c) => c.arg)).toEqual([other]);
    await worker.stop();
  });

  it('marks an event whose object the provider does not know processed instead of retrying it forever', async () => {
    const { worker, add, row } = setup({ knowsInvoice: false });
    add('evt_ghost', 'fk_never_created');
    worker.start();
    await worker.idle();
    expect(row('evt_ghost')).toMatchObject({ attempts: 0, last_error: 'the provider does not know this object' });
    expect(row('evt_ghost').processed_at).not.toBeNull();
    await worker.stop();
  });

  it('replay re-runs stored events with channel replay: a payment without a webhook is recorded once, a second replay changes nothing', async () => {
    const { worker, add, ledgerRows } = setup();
    const invoiceId = await newOrder();
    add('evt_pending', invoiceId, 'invoice.pending');
    worker.start();
    await worker.idle();
    core.fake.set(invoiceId, 'paid');
    const first = await worker.replay(0);
    expect(first).toEqual({ events: 1, outcomes: { recorded: 1, duplicate: 0, ignored: 0, rejected: 0, failed: 0 } });
    expect(ledgerRows(invoiceId).find((r) => r.status === 'paid')!.channel).toBe('replay');
    const second = await worker.replay(0);
    expect(second.outcomes).toMatchObject({ recorded: 0, duplicate: 1 });
    expect(core.count('SELECT count(*) AS n FROM vend_jobs')).toBe(1);
    await worker.stop();
  });

  it('stop() is safe twice and leaves unprocessed rows for the next start', async () => {
    const { worker, add, row } = setup();
    await worker.stop();
    const invoiceId = await newOrder();
    add('evt_after_stop', invoiceId);
    worker.notify();
    await worker.idle();
    expect(row('evt_after_stop').processed_at).toBeNull();
    await worker.stop();
  });
});
