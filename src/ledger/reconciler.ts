import { inTransaction, prepared, type Db } from '../store/index.js';
import { scheduleClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import type { PaymentProvider } from '../payments/types.js';
import { LIVE_STATES, type OrderState } from '../orders/index.js';
import { compareWithProvider, LOCAL_INVOICES_SQL, type LocalInvoice } from './compare.js';
import { observationOf, type Ledger } from './ledger.js';
import type { OrphanSweep } from './orphans.js';

export interface ReconcilerSettings {
  everyMs: number;
  days: number;
  readsPerHour: number;
}

/** An invoice is compared once the live path has had this long to finish with it. */
const SETTLE_MS = 5 * 60_000;
const RESTORED_ALARMS = ['database_restored', 'database_cloned'];

/** The reconciliation loop, as money/ composes it. */
export interface Reconciler {
  /** A pass every `everyMs` (the timer does not keep the process alive); a second call does nothing. */
  start(): void;
  /**
   * One pass now (the CLI, tests, a restored database); resolves with the mismatches found.
   * Concurrent calls share one pass.
   */
  run(): Promise<number>;
  /** After a restore: every recent invoice is compared again. */
  compareAllAgain(): void;
  /** The orphan sweep alone, now (after the start-up Events API read put new rows into the inbox). */
  sweepOrphans(): Promise<void>;
  /** No further passes; resolves when the pass in flight is over. */
  stop(): Promise<void>;
}

/**
 * Reconciliation as a loop: every invoice of the last `days` whose order has changed since it was
 * last compared (and each one still mismatched, once per pass) is read from the provider, observed
 * through the ledger like any other reading, and compared with our records. A mismatch raises
 * `reconcile/<order>` naming the order (MQTT, selftest); agreement clears it. Reads are bounded by
 * a budget per hour; nothing due → no reads at all.
 */
export function createReconciler(
  deps: { db: Db; clock: Clock; logger: Logger; outbox: Outbox; provider: PaymentProvider; ledger: Ledger; orphans?: OrphanSweep },
  settings: ReconcilerSettings,
): Reconciler {
  const { db, clock, outbox, provider, ledger } = deps;
  const log = deps.logger.child({ module: 'reconcile' });
  const reads: number[] = [];
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;

  /** The read budget's hour runs on the schedule clock: a wall clock set back would keep old reads in it for the jump. */
  const tick = scheduleClock(clock);

  /**
   * Invoices to compare: settled for SETTLE_MS, or updated further ahead of the wall clock than that
   * (written before the clock was set back: settled too, else held back for as long as the jump).
   */
  function due(now: number, limit: number): LocalInvoice[] {
    return prepared(
      db,
      `${LOCAL_INVOICES_SQL}
      WHERE oi.created_at >= ? AND (o.updated_at <= ? OR o.updated_at > ?)
        AND (oi.reconciled_at IS NULL OR oi.reconciled_at < o.updated_at
             OR (oi.reconciled_at < ? AND EXISTS (SELECT 1 FROM alarms a WHERE a.name = 'reconcile/' || o.id)))
      ORDER BY oi.created_at LIMIT CAST(? AS INTEGER)`,
    ).all(now - settings.days * 86_400_000, now - SETTLE_MS, now + SETTLE_MS, now - settings.everyMs + 1_000, limit) as LocalInvoice[];
  }

  async function runOnce(): Promise<number> {
    const now = clock.now();
    while (reads.length > 0 && reads[0]! <= tick() - 3_600_000) reads.shift();
    const rows = due(now, Math.max(0, settings.readsPerHour - reads.length));
    let mismatches = 0;
    for (const row of rows) {
      if (LIVE_STATES.includes(row.state as OrderState)) continue;
      reads.push(tick());
      let invoice;
      try {
        invoice = await provider.getInvoice(row.invoice_id);
      } catch (err) {
        log.warn({ err, invoiceId: row.invoice_id, orderId: row.order_id }, 'reconcile: the invoice is not readable now; next pass');
        continue;
      }
      ledger.observe(observationOf(invoice, 'reconcile'));
      const after = prepared(db, `${LOCAL_INVOICES_SQL} WHERE oi.invoice_id = ?`).get(row.invoice_id) as LocalInvoice;
      const finding = compareWithProvider(after, invoice.status, invoice.providerStatus);
      inTransaction(db, () => {
        // Compared as of its last update at least: an update stamped before the clock was set back
        // would otherwise look newer than the comparison and be read again every pass.
        prepared(
          db,
          'UPDATE order_invoices SET reconciled_at = max(?, (SELECT updated_at FROM orders WHERE id = order_invoices.order_id)) WHERE invoice_id = ?',
        ).run(clock.now(), row.invoice_id);
        if (finding) {
          outbox.raiseAlarm(`reconcile/${row.order_id}`, finding.kind === 'needs_a_person' ? 'critical' : 'warning', finding.detail, {
            orderId: row.order_id,
            reference: row.reference,
            invoiceId: row.invoice_id,
            kind: finding.kind,
            providerStatus: invoice.providerStatus,
            localState: after.state,
          });
          outbox.event('reconcile.mismatch', {
            orderId: row.order_id,
            reference: row.reference,
            invoiceId: row.invoice_id,
            kind: finding.kind,
          });
        } else {
          outbox.clearAlarm(`reconcile/${row.order_id}`);
        }
      });
      if (finding) {
        mismatches += 1;
        log.warn(
          { orderId: row.order_id, invoiceId: row.invoice_id, kind: finding.kind },
          'reconcile: our records and the provider differ',
        );
      }
    }
    // A restored database stays flagged until every recent invoice has been compared.
    if (rows.length > 0 && due(clock.now(), 1).length === 0)
      inTransaction(db, () => {
        for (const name of RESTORED_ALARMS) outbox.clearAlarm(name);
      });
    if (rows.length > 0) log.info({ compared: rows.length, mismatches }, 'reconcile pass done');
    await sweepOrphans();
    return mismatches;
  }

  /** Invoices under this device's reference that no order knows: settled (orphans.ts). */
  async function sweepOrphans(): Promise<void> {
    if (!deps.orphans) return;
    const settled = await deps.orphans.sweep();
    if (settled > 0) log.warn({ settled }, 'reconcile: orphan invoices settled');
  }

  return {
    start(): void {
      if (timer) return;
      // At start too: an orphan left by a power cut is settled without waiting for the first pass.
      void sweepOrphans().catch((err) => log.error({ err }, 'orphan sweep failed'));
      timer = setInterval(() => {
        void this.run().catch((err) => log.error({ err }, 'reconcile pass failed'));
      }, settings.everyMs);
      timer.unref();
    },
    /** One pass now (the CLI, tests, a restored database). Concurrent calls share one pass. */
    run(): Promise<number> {
      running ??= runOnce().finally(() => {
        running = null;
      });
      return running;
    },
    sweepOrphans,
    /** After a restore: every recent invoice is compared again. */
    compareAllAgain(): void {
      prepared(db, 'UPDATE order_invoices SET reconciled_at = NULL WHERE created_at >= ?').run(clock.now() - settings.days * 86_400_000);
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = null;
      await running?.catch(() => {});
    },
  };
}
