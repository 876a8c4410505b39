import fc from 'fast-check';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, createRetention, type Db } from '../../../src/store/index.js';
import { createManualClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/logger.js';
import { ORDER_STATES, type OrderState } from '../../../src/orders/index.js';
import { tempDir } from '../../helpers/temp.js';

/**
 * Retention deletes only what nobody can need again: old, finished, settled orders and processed
 * webhook bodies. Whatever the mix of rows, every protected row survives and the foreign keys hold.
 */
const DAY = 86_400_000;
const RETENTION_DAYS = 30;
const JOB_STATES = ['queued', 'firing', 'done', 'failed', 'uncertain', 'resolved'] as const;
const REFUND_STATES = ['requested', 'sending', 'pending', 'unknown', 'succeeded', 'failed'] as const;

interface OrderSpec {
  state: OrderState;
  ageDays: number;
  touchedDaysAgo: number;
  job: (typeof JOB_STATES)[number] | null;
  capturePending: boolean;
  refund: (typeof REFUND_STATES)[number] | null;
  alarm: boolean;
  ledgerRows: number;
  webhook: 'none' | 'processed' | 'unprocessed';
}

const orderSpec: fc.Arbitrary<OrderSpec> = fc.record({
  state: fc.constantFrom(...ORDER_STATES),
  ageDays: fc.integer({ min: 0, max: 90 }),
  touchedDaysAgo: fc.integer({ min: 0, max: 90 }),
  job: fc.option(fc.constantFrom(...JOB_STATES), { nil: null }),
  capturePending: fc.boolean(),
  refund: fc.option(fc.constantFrom(...REFUND_STATES), { nil: null }),
  alarm: fc.boolean(),
  ledgerRows: fc.integer({ min: 0, max: 3 }),
  webhook: fc.constantFrom('none', 'processed', 'unprocessed'),
});

/** A vended order, its vend done and its webhook processed, made and last touched `days` ago. */
const vendedDaysAgo = (days: number): OrderSpec => ({
  state: 'vended',
  ageDays: days,
  touchedDaysAgo: days,
  job: 'done',
  capturePending: false,
  refund: null,
  alarm: false,
  ledgerRows: 2,
  webhook: 'processed',
});

/** Writes one order with its dependents the way the money path would leave them. */
function insertOrder(db: Db, now: number, index: number, spec: OrderSpec): number {
  const created = now - spec.ageDays * DAY - 1000;
  const updated = Math.max(created, now - Math.min(spec.touchedDaysAgo, spec.ageDays) * DAY - 1000);
  const invoiceId = `inv_${index}`;
  const { lastInsertRowid } = db
    .prepare(
      `INSERT INTO orders (reference, attempt, idempotency_key, source, slot, item_name, amount, currency, livemode, provider,
       capture_mode, state, invoice_id, pay_url, expires_at, created_at, updated_at)
     VALUES (?, 1, ?, 'kiosk', 'A1', 'Water', 1500, 'MNT', 0, 'sandbox', 'automatic', ?, ?, 'https://pay/x', ?, ?, ?)`,
    )
    .run(`ref-${index}`, `ref-${index}-pay`, spec.state, invoiceId, created + 500, created, updated);
  const id = Number(lastInsertRowid);
  db.prepare('INSERT INTO order_invoices (invoice_id, order_id, attempt, created_at) VALUES (?, ?, 1, ?)').run(invoiceId, id, created);
  db.prepare("INSERT INTO order_history (order_id, at, from_state, to_state, reason) VALUES (?, ?, NULL, 'creating', 'test')").run(
    id,
    created,
  );
  const statuses = ['pending', 'paid', 'refunded'];
  for (let i = 0; i < spec.ledgerRows; i += 1) {
    db.prepare(
      `INSERT INTO invoice_status_ledger (invoice_id, status, order_id, provider_status, channel, observed_at, evidence)
                VALUES (?, ?, ?, ?, 'poll', ?, '{}')`,
    ).run(invoiceId, statuses[i], id, statuses[i], created);
  }
  if (spec.job) {
    db.prepare('INSERT INTO vend_jobs (order_id, state, slot, created_at, capture_state) VALUES (?, ?, ?, ?, ?)').run(
      id,
      spec.job,
      'A1',
      created,
      spec.capturePending ? 'pending' : null,
    );
  }
  if (spec.refund) {
    db.prepare(
      `INSERT INTO refunds (invoice_id, order_id, idempotency_key, kind, amount, reason, state, created_at, updated_at)
                VALUES (?, ?, ?, 'refund', 1500, 'test', ?, ?, ?)`,
    ).run(invoiceId, id, `ref-${index}-refund`, spec.refund, created, updated);
  }
  if (spec.alarm) {
    db.prepare("INSERT INTO alarms (name, severity, message, detail, raised_at) VALUES (?, 'critical', 'test', '{}', ?)").run(
      `vend_uncertain/${id}`,
      created,
    );
  }
  if (spec.webhook !== 'none') {
    db.prepare(
      `INSERT INTO webhook_events (event_id, provider, type, object_id, livemode, raw_body, received_at, processed_at)
                VALUES (?, 'sandbox', 'payment_intent.succeeded', ?, 0, ?, ?, ?)`,
    ).run(`evt_${index}`, invoiceId, Buffer.from('{}'), created, spec.webhook === 'processed' ? created + 10 : null);
  }
  return id;
}

/** The rule, written independently of the SQL: may this order go? */
function prunable(spec: OrderSpec): boolean {
  const old = spec.ageDays >= RETENTION_DAYS && Math.min(spec.touchedDaysAgo, spec.ageDays) >= RETENTION_DAYS;
  const finalState = ['vended', 'refunded', 'canceled', 'expired', 'failed'].includes(spec.state);
  const jobSettled = spec.job === null || (['done', 'failed', 'resolved'].includes(spec.job) && !spec.capturePending);
  const refundSettled = spec.refund === null || spec.refund === 'succeeded' || spec.refund === 'failed';
  return old && finalState && jobSettled && refundSettled && !spec.alarm;
}

describe('data retention', () => {
  const dirs: ReturnType<typeof tempDir>[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) d.cleanup();
  });

  function open() {
    const dir = tempDir();
    dirs.push(dir);
    return openDatabase(join(dir.path, 'vendgate.db'));
  }

  it('prunes exactly the old settled orders and processed webhook bodies, never a protected row', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(orderSpec, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 7 }), async (specs, batchSize) => {
        const db = open();
        try {
          const clock = createManualClock();
          const now = clock.now();
          const ids = specs.map((spec, i) => insertOrder(db, now, i, spec));
          db.prepare("INSERT INTO outbox (id, kind, topic, payload, retain, created_at) VALUES ('o1', 'event', 'events', '{}', 0, ?)").run(
            now - 400 * DAY,
          );
          const retention = createRetention({ db, clock, logger: silentLogger() }, { retentionDays: RETENTION_DAYS, batchSize });
          const counts = await retention.pruneAll();

          const remaining = new Set(db.prepare('SELECT id FROM orders').pluck().all() as number[]);
          specs.forEach((spec, i) => {
            expect(remaining.has(ids[i]!), `order ${i} ${JSON.stringify(spec)}`).toBe(!prunable(spec));
          });
          expect(counts.orders).toBe(specs.filter(prunable).length);
          const webhookLeft = (db.prepare('SELECT event_id FROM webhook_events').pluck().all() as string[]).sort();
          const webhookExpected = specs
            .flatMap((s, i) =>
              s.webhook === 'unprocessed' || (s.webhook === 'processed' && s.ageDays < RETENTION_DAYS) ? [`evt_${i}`] : [],
            )
            .sort();
          expect(webhookLeft).toEqual(webhookExpected);
          // Alarms and the outbox are never touched; nothing points at a deleted order.
          expect(db.prepare('SELECT count(*) FROM alarms').pluck().get()).toBe(specs.filter((s) => s.alarm).length);
          expect(db.prepare('SELECT count(*) FROM outbox').pluck().get()).toBe(1);
          expect(db.pragma('foreign_key_check')).toEqual([]);
          for (const table of ['order_invoices', 'order_history', 'invoice_status_ledger', 'vend_jobs', 'refunds']) {
            expect(db.prepare(`SELECT count(*) FROM ${table} WHERE order_id NOT IN (SELECT id FROM orders)`).pluck().get(), table).toBe(0);
          }
        } finally {
          db.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a scheduled pass runs off the start-up path and stop() is safe twice', async () => {
    const db = open();
    const clock = createManualClock();
    insertOrder(db, clock.now(), 1, vendedDaysAgo(60));
    const retention = createRetention(
      { db, clock, logger: silentLogger() },
      { retentionDays: RETENTION_DAYS, firstDelayMs: 1, intervalMs: 60_000 },
    );
    retention.start();
    const deadline = Date.now() + 5_000;
    while ((db.prepare('SELECT count(*) FROM orders').pluck().get() as number) > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(db.prepare('SELECT count(*) FROM orders').pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM webhook_events').pluck().get()).toBe(0);
    await retention.stop();
    await retention.stop();
    db.close();
  });

  it('deletes a large backlog in bounded batches', async () => {
    const db = open();
    const clock = createManualClock();
    const now = clock.now();
    db.transaction(() => {
      for (let i = 0; i < 1_000; i += 1) insertOrder(db, now, i, vendedDaysAgo(45));
    })();
    const retention = createRetention({ db, clock, logger: silentLogger() }, { retentionDays: RETENTION_DAYS, batchSize: 100 });
    const first = retention.pruneBatch();
    expect(first.orders).toBe(100);
    expect(first.webhookEvents).toBe(100);
    const rest = await retention.pruneAll();
    expect(rest.orders).toBe(900);
    expect(db.prepare('SELECT count(*) FROM orders').pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM invoice_status_ledger').pluck().get()).toBe(0);
    db.close();
  });
});
