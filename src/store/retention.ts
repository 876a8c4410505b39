import type { Db } from './open.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';

/**
 * Data retention: finished orders (with their ledger rows, history, vend job, refunds and receipts) and
 * processed webhook bodies older than `storage.retentionDays` are deleted, a small batch per
 * transaction, yielding to the event loop between batches so a vend never waits behind a prune.
 *
 * It lives in store/ because it is the one place that deletes across every module's tables (the
 * foreign keys force one order of deletes); each module still owns its inserts and updates.
 *
 * Never pruned, whatever their age: orders not in a final state, orders whose vend job is not done
 * (queued, firing, uncertain) or whose manual capture is pending, orders with a refund that is not
 * succeeded/failed, orders with a fiscal receipt still owed, orders with an open alarm, orders whose invoice could still be paid, unprocessed
 * webhook rows, alarms, the outbox (mqtt/ drains and bounds it), counters and meta.
 */

export interface RetentionSettings {
  retentionDays: number;
  /** Between two pruning passes. Default 10 minutes. */
  intervalMs?: number;
  /** First pass after start(): later than start-up work. Default 60 s. */
  firstDelayMs?: number;
  /** Orders (or webhook rows) deleted per transaction. Default 200. */
  batchSize?: number;
}

export interface PruneCounts {
  orders: number;
  ledgerRows: number;
  historyRows: number;
  invoices: number;
  vendJobs: number;
  refunds: number;
  webhookEvents: number;
}

export interface Retention {
  /** Schedules a pass every `intervalMs` (timer unref'd). Idempotent. */
  start(): void;
  /** Stops scheduling and waits for a pass in progress to finish its current batch. Safe twice. */
  stop(): Promise<void>;
  /** Deletes one batch of each kind in one transaction; synchronous (tests, benchmarks). */
  pruneBatch(): PruneCounts;
  /** Batches until nothing old is left (or stop()), yielding between batches. */
  pruneAll(): Promise<PruneCounts>;
}

const DAY_MS = 86_400_000;
const FINAL_PRUNABLE = "('vended', 'refunded', 'canceled', 'expired', 'failed')";

function emptyCounts(): PruneCounts {
  return { orders: 0, ledgerRows: 0, historyRows: 0, invoices: 0, vendJobs: 0, refunds: 0, webhookEvents: 0 };
}

function add(into: PruneCounts, more: PruneCounts): PruneCounts {
  for (const key of Object.keys(into) as (keyof PruneCounts)[]) into[key] += more[key];
  return into;
}

export function createRetention(deps: { db: Db; clock: Clock; logger: Logger }, settings: RetentionSettings): Retention {
  const { db, clock } = deps;
  const log = deps.logger.child({ module: 'retention' });
  const intervalMs = settings.intervalMs ?? 600_000;
  const firstDelayMs = settings.firstDelayMs ?? 60_000;
  const batchSize = settings.batchSize ?? 200;
  let timer: NodeJS.Timeout | null = null;
  let pass: Promise<PruneCounts> | null = null;
  let stopped = true;
  // Set by stop(): a pass in progress ends after its current batch.
  let aborted = false;
  let prepared: ReturnType<typeof prepare> | null = null;

  // Prepared on first use: the constructor does nothing, and the tables exist only after migrations.
  function prepare() {
    return {
      // The created_at index bounds the scan to old orders; updated_at keeps an old order that
      // changed recently (a late refund), expires_at one whose invoice can still be paid.
      candidates: db.prepare(
        `SELECT o.id, o.invoice_id, o.attempt FROM orders o INDEXED BY orders_created_at
          WHERE o.created_at < @cutoff AND o.updated_at < @cutoff AND coalesce(o.expires_at, 0) < @cutoff
            AND o.state IN ${FINAL_PRUNABLE}
            AND NOT EXISTS (SELECT 1 FROM vend_jobs j WHERE j.order_id = o.id
                             AND (j.state NOT IN ('done', 'failed', 'resolved') OR j.capture_state IS 'pending'))
            AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.id AND r.state NOT IN ('succeeded', 'failed'))
            AND NOT EXISTS (SELECT 1 FROM receipts c WHERE c.order_id = o.id AND c.state IN ('queued', 'sending', 'unknown'))
            AND NOT EXISTS (SELECT 1 FROM alarms a WHERE a.name LIKE '%/' || o.id)
          ORDER BY o.created_at LIMIT @limit`,
      ),
      // Earlier attempts' invoices (attempt > 1 only): order_invoices has no order_id index, so
      // this scan is kept off the common path where the order row names its only invoice.
      invoicesOf: db.prepare('SELECT invoice_id FROM order_invoices WHERE order_id = ?').pluck(),
      ledger: db.prepare('DELETE FROM invoice_status_ledger WHERE invoice_id = ?'),
      invoice: db.prepare('DELETE FROM order_invoices WHERE invoice_id = ?'),
      refunds: db.prepare('DELETE FROM refunds WHERE order_id = ?'),
      vendJob: db.prepare('DELETE FROM vend_jobs WHERE order_id = ?'),
      receipts: db.prepare('DELETE FROM receipts WHERE order_id = ?'),
      history: db.prepare('DELETE FROM order_history WHERE order_id = ?'),
      order: db.prepare('DELETE FROM orders WHERE id = ?'),
      webhookEvents: db.prepare(
        `DELETE FROM webhook_events WHERE rowid IN (
           SELECT rowid FROM webhook_events WHERE received_at < ? AND processed_at IS NOT NULL ORDER BY received_at LIMIT CAST(? AS INTEGER))`,
      ),
    };
  }

  function pruneBatch(): PruneCounts {
    const sql = (prepared ??= prepare());
    const cutoff = clock.now() - settings.retentionDays * DAY_MS;
    const counts = emptyCounts();
    db.transaction(() => {
      const rows = sql.candidates.all({ cutoff, limit: batchSize }) as { id: number; invoice_id: string | null; attempt: number }[];
      for (const row of rows) {
        const invoices = row.attempt > 1 ? (sql.invoicesOf.all(row.id) as string[]) : row.invoice_id ? [row.invoice_id] : [];
        for (const invoiceId of invoices) {
          counts.ledgerRows += sql.ledger.run(invoiceId).changes;
          counts.invoices += sql.invoice.run(invoiceId).changes;
        }
        counts.refunds += sql.refunds.run(row.id).changes;
        counts.vendJobs += sql.vendJob.run(row.id).changes;
        sql.receipts.run(row.id);
        counts.historyRows += sql.history.run(row.id).changes;
        counts.orders += sql.order.run(row.id).changes;
      }
      counts.webhookEvents += sql.webhookEvents.run(cutoff, batchSize).changes;
    }).immediate();
    return counts;
  }

  async function pruneAll(): Promise<PruneCounts> {
    const total = emptyCounts();
    const startedAt = Date.now();
    let batches = 0;
    for (;;) {
      const counts = pruneBatch();
      add(total, counts);
      batches += 1;
      if (counts.orders < batchSize && counts.webhookEvents < batchSize) break;
      // Let HTTP, the poller and vends run between two batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (aborted) break;
    }
    if (total.orders > 0 || total.webhookEvents > 0) {
      log.info({ ...total, batches, ms: Date.now() - startedAt, retentionDays: settings.retentionDays }, 'old records pruned');
    }
    return total;
  }

  function runPass(): void {
    if (pass) return;
    pass = pruneAll()
      .catch((err) => {
        log.error({ err }, 'pruning failed; will try again at the next pass');
        return emptyCounts();
      })
      .finally(() => {
        pass = null;
        schedule(intervalMs);
      });
  }

  function schedule(delayMs: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = null;
      runPass();
    }, delayMs);
    timer.unref();
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      aborted = false;
      schedule(firstDelayMs);
    },
    async stop() {
      stopped = true;
      aborted = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await pass;
    },
    pruneBatch,
    pruneAll,
  };
}
