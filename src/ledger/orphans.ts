/**
 * The orphan sweep (docs/money-path.md, "Money the device has no record of"): an invoice the provider
 * holds under this device's reference that no order of the database knows. The create answer is on
 * disk before a QR is shown, so money on such an invoice means the database lost history (a new or
 * replaced card, a restored backup, a lost WAL): goods may have gone out for it. `ORPHAN_RULES`
 * (orders/decide.ts) decide: paid or held → parked for a person with a critical alarm (settled with
 * `vendgate settle`), unless this database itself proves no goods went out (`proofOfNoDelivery`);
 * pending → read again at the next pass; closed unpaid → nothing owed.
 *
 * Candidates come from the webhook inbox (webhooks, and Gerege's Events API, which the backfill
 * reads), with the reference the event body claims. That claim only picks what to read: the
 * reference and amount acted on are the provider's own answer to the device's authenticated read,
 * and a body the provider contradicts raises `forged_event` and changes nothing. A QutPay invoice
 * whose webhook never reached us cannot be seen: QutPay has no list or events endpoint.
 */
import { durably, inTransaction, prepared, wasRestored, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import type { Invoice, PaymentProvider } from '../payments/index.js';
import { isReferenceOf, orphanRuleFor, type OrderRepository } from '../orders/index.js';
import { raiseForgedEvent } from './forged.js';

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

/**
 * `refunding`: the sweep's refund claim is on disk, its POST follows. `refunded` | `closed`: settled by
 * the sweep. `person`: parked for a person. `forged`: the body's claim was contradicted by the
 * provider, nothing done. `settling`, `settled_*`: a person's settlement (ledger/settle.ts).
 */
type OrphanState = 'refunding' | 'refunded' | 'closed' | 'person' | 'forged' | 'settling' | string;

/** The command that settles a parked orphan, as its alarm tells the person. */
export const settleCommandFor = (invoiceId: string) =>
  `vendgate settle orphan_invoice/${invoiceId} refund|goods-went-out|not-ours (or the signed MQTT command settle)`;

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
    // Everything a person needs to decide, from the provider's own read.
    const detail = {
      invoiceId: c.invoiceId,
      reference: invoice.reference,
      status: invoice.providerStatus,
      amount: invoice.amount,
      refunded: invoice.refundedAmount ?? 0,
      currency: invoice.currency,
      livemode: invoice.livemode,
      createdAt: invoice.createdAt === undefined ? null : new Date(invoice.createdAt).toISOString(),
      provider: provider.name,
      what,
      ...(severity === 'critical' ? { settle: settleCommandFor(c.invoiceId) } : {}),
    };
    outbox.raiseAlarm(
      `orphan_invoice/${c.invoiceId}`,
      severity,
      `an invoice under this device's reference that no order knows (its record was lost): ${what}`,
      detail,
    );
    log.error(detail, 'orphan invoice');
  }

  /**
   * This database's own proof that no goods went out for `reference`, or null: an order under
   * exactly that reference, closed unpaid (nothing automatic leaves those states but a reading of its
   * own invoice), that never had a vend job, on a database never restored (a restore can take a later
   * vend claim away). Read inside the transaction that acts on it.
   */
  function proofOfNoDelivery(reference: string): string | null {
    if (wasRestored(db)) return null;
    const order = prepared(
      db,
      `SELECT o.id, o.state FROM orders o
        WHERE o.reference = ? AND o.state IN ('failed', 'canceled', 'expired')
          AND NOT EXISTS (SELECT 1 FROM vend_jobs j WHERE j.order_id = o.id)`,
    ).get(reference) as { id: number; state: string } | undefined;
    return order ? `order ${order.id} under this reference is ${order.state} and never had a vend job` : null;
  }

  async function settle(c: OrphanCandidate): Promise<boolean> {
    const invoice = await provider.getInvoice(c.invoiceId);
    // The body's reference was a claim; the provider's answer is the fact.
    if (invoice.reference !== c.reference || !isReferenceOf(deps.deviceId, invoice.reference)) {
      inTransaction(db, () => {
        record(c, 'forged', invoice.amount, `the provider's reference is ${invoice.reference}`);
        raiseForgedEvent(outbox, `forged_event/${c.invoiceId}`, {
          invoiceId: c.invoiceId,
          what: "an event body put this device's reference on an invoice the provider holds under another",
          claimed: { reference: c.reference },
          provider: { reference: invoice.reference, status: invoice.providerStatus, amount: invoice.amount },
        });
      });
      log.error({ invoiceId: c.invoiceId, claimed: c.reference, actual: invoice.reference }, 'forged event: reference contradicted');
      return true;
    }
    const rest = invoice.amount - (invoice.refundedAmount ?? 0);
    const rule = orphanRuleFor({
      status: invoice.status,
      rest,
      provenNotDelivered: proofOfNoDelivery(invoice.reference) !== null,
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
        record(c, 'person', rest, `${rule.name}: ${invoice.status}, not ${invoice.status === 'authorized' ? 'voided' : 'refunded'}`);
        alarm(
          c,
          invoice,
          `it is ${invoice.status === 'authorized' ? 'held' : 'paid'} (${rest} ${invoice.currency}) and this database has no order for it: ` +
            'the database lost history (a new or replaced card, a restored backup), so the goods may have gone out for it. Nothing was ' +
            `refunded or voided. Check whether the goods went out for reference ${invoice.reference} (the machine's counters, MQTT ` +
            'history, the operator), then settle it',
          'critical',
        );
      });
      return true;
    }
    // Money taken and nothing vended for it here: it goes back. The claim is on disk before the POST.
    const key = `${c.reference}-orphan-refund`;
    // The proof is read again with the claim: an order may have taken the invoice during the read.
    const claimed = durably(
      db,
      () => {
        const proof = orders.getByInvoice(c.invoiceId) ? null : proofOfNoDelivery(invoice.reference);
        if (proof) record(c, 'refunding', rest, `refund claimed: ${proof}`, key);
        return proof !== null;
      },
      'refund_claim',
    );
    if (!claimed) return false;
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
