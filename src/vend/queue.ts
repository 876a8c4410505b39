import { prepared, type Db } from '../store/index.js';
import type { Outbox } from '../outbox/index.js';

/**
 * The two ways money work enters `vend/`'s tables: a vend job for a paid order, a refund for a paid
 * invoice. Called inside the caller's transaction (the ledger's observe(), a settlement), so the
 * decision, the queued work and its outbox events commit together.
 */

/** The refund key of an invoice: derived from the order like the pay key, one per attempt. */
export function refundKeyFor(reference: string, attempt: number): string {
  return attempt <= 1 ? `${reference}-refund` : `${reference}-refund-${attempt}`;
}

export interface RefundToQueue {
  /** The order id. */
  id: number;
  reference: string;
  amount: number;
  invoiceId: string;
  attempt: number;
  kind: 'refund' | 'void';
  reason: string;
  now: number;
}

/** At most one refund per invoice, with the key derived from the order. Returns false when one exists. */
export function queueRefundFor(deps: { db: Db; outbox: Outbox }, refund: RefundToQueue): boolean {
  const queued =
    prepared(
      deps.db,
      `INSERT INTO refunds (invoice_id, order_id, idempotency_key, kind, amount, reason, state, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 'requested', ?, ?) ON CONFLICT DO NOTHING`,
    ).run(
      refund.invoiceId,
      refund.id,
      refundKeyFor(refund.reference, refund.attempt),
      refund.kind,
      refund.amount,
      refund.reason,
      refund.now,
      refund.now,
    ).changes === 1;
  if (queued) {
    deps.outbox.event('refund.requested', {
      orderId: refund.id,
      reference: refund.reference,
      invoiceId: refund.invoiceId,
      kind: refund.kind,
      amount: refund.amount,
      reason: refund.reason,
    });
    deps.outbox.count('refunds_requested');
  }
  return queued;
}

/** One vend job per order (its primary key): a second call for the same order queues nothing. */
export function queueVendFor(
  deps: { db: Db; outbox: Outbox },
  order: { id: number; reference: string; slot: string | null },
  now: number,
): boolean {
  const queued =
    prepared(deps.db, "INSERT INTO vend_jobs (order_id, state, slot, created_at) VALUES (?, 'queued', ?, ?) ON CONFLICT DO NOTHING").run(
      order.id,
      order.slot,
      now,
    ).changes === 1;
  if (queued) deps.outbox.event('vend.queued', { orderId: order.id, reference: order.reference, slot: order.slot });
  return queued;
}

/** Whether a refund of this invoice is already queued or under way (any state but failed). */
export function refundExists(db: Db, invoiceId: string): boolean {
  return prepared(db, "SELECT 1 FROM refunds WHERE invoice_id = ? AND state != 'failed'").get(invoiceId) !== undefined;
}
