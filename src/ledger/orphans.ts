/**
 * The orphan sweep (docs/money-path.md, the edges of a payment's life): an invoice the provider holds under this device's reference (its
 * parse names exactly this device: orders/reference.ts) that no order of the database knows is
 * still a customer's money — its record was lost (a power cut before the create answer was stored,
 * a restored database, a card turned read-only). Each one
 * is followed to a final answer by `ORPHAN_RULES` (orders/decide.ts): paid → refunded (the goods
 * were never handed out for it, as far as this database knows), except on a restored database,
 * where it may have been vended before the restore → parked for a person; held (manual capture) →
 * voided; pending → read again at the next pass; closed unpaid → nothing owed. An alarm says what
 * was found and done, either way.
 *
 * Where candidates come from is the caller's port: invoices the webhook inbox has events about
 * (webhooks, and Gerege's Events API, which the backfill reads from its cursor — after a restore,
 * from the restored cursor). A QutPay invoice whose webhook never reached us cannot be seen: QutPay
 * has no list or events endpoint.
 */
import { durably, inTransaction, prepared, wasRestored, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import type { Invoice, PaymentProvider } from '../payments/index.js';
import { isReferenceOf, orphanRuleFor, type OrderRepository } from '../orders/index.js';

export interface OrphanCandidate {
  invoiceId: string;
  reference: string;
}

export interface OrphanSweepDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
  provider: PaymentProvider;
  /** The process's order repository: an invoice one of its orders has is not an orphan. */
  orders: Pick<OrderRepository, 'getByInvoice'>;
  /**
   * Invoices seen under a reference prefix (the inbox), received since `sinceMs`. The prefix is only
   * a first cut: `vm-1-` also starts `vm-1-annex-…`, another device's references.
   */
  candidates: (prefix: string, sinceMs: number) => OrphanCandidate[];
  /**
   * This device's id. A candidate is this device's only when its reference, read from the right
   * (orders/reference.ts), names exactly this device (any database id).
   */
  deviceId: string;
  lookbackMs: number;
  /**
   * `storage.retentionDays`: retention deletes an old order with its invoices, but an event about
   * its invoice (a late webhook, the Events API read again) can reach the inbox after. An invoice
   * that expired before this far back may be such a pruned order's: it is never settled as an orphan.
   */
  retentionMs: number;
}

type OrphanState = 'refunding' | 'refunded' | 'closed' | 'person';

export interface OrphanSweep {
  /** One pass; resolves with the orphans settled or parked in it. */
  sweep(): Promise<number>;
}

export function createOrphanSweep(deps: OrphanSweepDeps): OrphanSweep {
  const { db, clock, outbox, provider } = deps;
  const log = deps.logger.child({ module: 'orphans' });
  const { orders } = deps;

  const stateOf = (invoiceId: string) =>
    (prepared(db, 'SELECT state FROM orphan_invoices WHERE invoice_id = ?').get(invoiceId) as { state: OrphanState } | undefined)?.state;

  function record(c: OrphanCandidate, state: OrphanState, amount: number, detail: string, refundKey: string | null = null): void {
    const now = clock.now();
    prepared(
      db,
      `INSERT INTO orphan_invoices (invoice_id, reference, state, amount, refund_key, detail, found_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (invoice_id) DO UPDATE SET state = excluded.state, detail = excluded.detail, updated_at = excluded.updated_at`,
    ).run(c.invoiceId, c.reference, state, amount, refundKey, detail, now, now);
  }

  function alarm(c: OrphanCandidate, invoice: Invoice, what: string, severity: 'critical' | 'warning'): void {
    const detail = { invoiceId: c.invoiceId, reference: c.reference, status: invoice.providerStatus, amount: invoice.amount, what };
    outbox.raiseAlarm(
      `orphan_invoice/${c.invoiceId}`,
      severity,
      `an invoice under this device's reference that no order knows (its record was lost): ${what}`,
      detail,
    );
    log.error(detail, 'orphan invoice');
  }

  async function settle(c: OrphanCandidate): Promise<boolean> {
    const invoice = await provider.getInvoice(c.invoiceId);
    const rest = invoice.amount - (invoice.refundedAmount ?? 0);
    const rule = orphanRuleFor({
      status: invoice.status,
      rest,
      restoredDatabase: wasRestored(db),
      olderThanRetention: invoice.expiresAt < clock.now() - deps.retentionMs,
    });
    if (rule.then === 'read_again') return false;
    if (rule.then === 'void') {
      const after = await provider.cancelInvoice(c.invoiceId);
      inTransaction(db, () => {
        const done = after.status === 'canceled' || after.status === 'expired';
        record(c, done ? 'closed' : 'person', invoice.amount, `held money voided: ${after.providerStatus}`);
        alarm(
          c,
          after,
          done ? 'the held money was released' : `the hold could not be released (${after.providerStatus}): check it`,
          'critical',
        );
      });
      return true;
    }
    if (rule.then === 'too_old') {
      inTransaction(db, () => {
        record(c, 'closed', rest, `${rule.name}: expired ${new Date(invoice.expiresAt).toISOString()}, before the retention`);
        alarm(
          c,
          invoice,
          `it is older than storage.retentionDays (${invoice.status}), so the order that had it may have been deleted by retention: ` +
            `it was neither refunded nor voided. If no sale of this device matches reference ${c.reference}, settle it at the provider`,
          'warning',
        );
      });
      return true;
    }
    if (rule.then === 'nothing_owed') {
      inTransaction(db, () => {
        record(c, 'closed', invoice.amount, `nothing owed: ${invoice.providerStatus}`);
        alarm(c, invoice, `nothing is owed (${invoice.status})`, 'warning');
      });
      return true;
    }
    if (rule.then === 'person') {
      inTransaction(db, () => {
        record(c, 'person', rest, `${rule.name}: paid on a restored database, not refunded`);
        alarm(
          c,
          invoice,
          `it was paid (${rest} not refunded) and this database was restored from a backup: its order may have been made after the backup ` +
            `and vended before the restore, so it was NOT refunded automatically. Check whether the goods went out for reference ${c.reference} ` +
            '(the machine, MQTT history, the operator); if they did not, refund it at the provider; if they did, nothing is owed',
          'critical',
        );
      });
      return true;
    }
    // Money taken and nothing vended for it here: it goes back. The claim is on disk before the POST.
    const key = `${c.reference}-orphan-refund`;
    durably(db, () => record(c, 'refunding', rest, 'refund claimed', key), 'refund_claim');
    const request = { invoiceId: c.invoiceId, amount: rest, idempotencyKey: key };
    let result = await provider.refund(request);
    // Same key, same body: the provider returns the same refund, never a second (Gerege).
    if (result.status === 'unknown' && provider.confirmRefund) result = await provider.confirmRefund(request);
    inTransaction(db, () => {
      if (result.status === 'succeeded' || result.status === 'pending') {
        record(c, 'refunded', rest, `refund ${result.refundId ?? ''} ${result.status}`);
        alarm(c, invoice, `it was paid; ${rest} was refunded (${result.status})`, 'critical');
      } else {
        record(c, 'person', rest, `refund ${result.status}: ${result.detail ?? ''}`);
        alarm(c, invoice, `it was paid and its refund of ${rest} did not go through (${result.status}): settle it by hand`, 'critical');
      }
    });
    return true;
  }

  /** Passes run one after another, never two at once: two would settle one orphan twice. */
  let tail: Promise<unknown> = Promise.resolve();

  async function pass(): Promise<number> {
    let settled = 0;
    for (const c of deps.candidates(`${deps.deviceId}-`, clock.now() - deps.lookbackMs)) {
      // Another device whose id starts with ours (`vm-1-annex` beside `vm-1`) is not ours to settle.
      if (!isReferenceOf(deps.deviceId, c.reference)) continue;
      if (orders.getByInvoice(c.invoiceId)) continue;
      const state = stateOf(c.invoiceId);
      // A claim a cut interrupted is for a person: its POST may have gone out (QutPay refunds are never repeated).
      if (state === 'refunding') {
        inTransaction(db, () => {
          record(c, 'person', 0, 'refund claim interrupted');
          outbox.raiseAlarm(
            `orphan_invoice/${c.invoiceId}`,
            'critical',
            'an orphan invoice was being refunded when the service stopped: check at the provider whether the refund went through',
            { invoiceId: c.invoiceId, reference: c.reference },
          );
        });
        continue;
      }
      if (state) continue;
      try {
        if (await settle(c)) settled += 1;
      } catch (err) {
        log.warn({ err, invoiceId: c.invoiceId }, 'orphan sweep: the invoice is not readable now; next pass');
      }
    }
    return settled;
  }

  return {
    sweep(): Promise<number> {
      const next = tail.then(pass);
      tail = next.catch(() => {});
      return next;
    },
  };
}
