import type { Db } from '../store/index.js';
import { inTransaction } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import type { CanonicalStatus } from '../payments/types.js';
import { createOrderRepository, decideObservation, type OrderState } from '../orders/index.js';

export type Channel = 'poll' | 'webhook' | 'backfill' | 'create' | 'replay' | 'refund' | 'expiry';

/** One reading of an invoice's current state, from a GET (or the create response). */
export interface Observation {
  invoiceId: string;
  status: CanonicalStatus;
  providerStatus: string;
  livemode: boolean;
  amount: number;
  currency: string;
  channel: Channel;
  /** The webhook event that led to the GET, when there was one. */
  eventId?: string;
}

export type ObserveResult =
  | { outcome: 'unknown_invoice' }
  | { outcome: 'rejected'; reason: 'livemode_mismatch' | 'amount_mismatch'; orderId: number }
  | { outcome: 'duplicate'; orderId: number }
  | {
      outcome: 'recorded';
      orderId: number;
      from: OrderState;
      to: OrderState | null;
      vendQueued: boolean;
      refundQueued: boolean;
      /** The status is evidence about a refund (refunded / partially_refunded / canceled on a void). */
      refundEvidence: boolean;
    };

export interface Ledger {
  /**
   * The only function that moves an order because of money. One synchronous transaction: records
   * (invoice, status) once, applies the forward-only decision, queues the vend or the refund, and
   * writes the outbox rows. Safe to call any number of times from any channel, in any order.
   */
  observe(observation: Observation): ObserveResult;
}

/** The refund key of an invoice: derived from the order like the pay key, one per attempt. */
export function refundKeyFor(reference: string, attempt: number): string {
  return attempt <= 1 ? `${reference}-refund` : `${reference}-refund-${attempt}`;
}

/**
 * Queues the money back for one paid invoice: at most one refund per invoice, with the key derived
 * from the order, and its outbox event in the caller's transaction. The one place refunds are queued.
 */
export function queueRefundFor(
  deps: { db: Db; outbox: Outbox },
  refund: { id: number; reference: string; amount: number; invoiceId: string; attempt: number; kind: 'refund' | 'void'; reason: string; now: number },
): boolean {
  const queued = deps.db.prepare(
    `INSERT INTO refunds (invoice_id, order_id, idempotency_key, kind, amount, reason, state, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 'requested', ?, ?) ON CONFLICT DO NOTHING`,
  ).run(refund.invoiceId, refund.id, refundKeyFor(refund.reference, refund.attempt), refund.kind, refund.amount, refund.reason, refund.now, refund.now).changes === 1;
  if (queued) {
    deps.outbox.event('refund.requested', { orderId: refund.id, reference: refund.reference, invoiceId: refund.invoiceId, kind: refund.kind, amount: refund.amount, reason: refund.reason });
    deps.outbox.count('refunds_requested');
  }
  return queued;
}

export function createLedger(deps: { db: Db; clock: Clock; logger: Logger; outbox: Outbox }): Ledger {
  const { db, clock, outbox } = deps;
  const log = deps.logger.child({ module: 'ledger' });
  const orders = createOrderRepository({ db, clock });
  const insertLedger = db.prepare(
    `INSERT INTO invoice_status_ledger (invoice_id, status, order_id, provider_status, channel, observed_at, evidence)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  const insertVendJob = db.prepare(
    "INSERT INTO vend_jobs (order_id, state, slot, created_at) VALUES (?, 'queued', ?, ?) ON CONFLICT DO NOTHING",
  );
  function observeInTransaction(o: Observation): ObserveResult {
    const order = orders.getByInvoice(o.invoiceId);
    if (!order) return { outcome: 'unknown_invoice' };

    // Invariant 2: a test payment never pays for a live order, nor the reverse. Written nowhere.
    if (o.livemode !== (order.livemode === 1)) {
      log.warn({ orderId: order.id, invoiceId: o.invoiceId, livemode: o.livemode }, 'observation livemode differs from the order: ignored');
      return { outcome: 'rejected', reason: 'livemode_mismatch', orderId: order.id };
    }
    const moneyStatus = o.status === 'paid' || o.status === 'authorized';
    if (moneyStatus && (o.amount !== order.amount || o.currency !== order.currency)) {
      log.error({ orderId: order.id, invoiceId: o.invoiceId, amount: o.amount, currency: o.currency }, 'paid amount differs from the order: not vended');
      outbox.raiseAlarm(`payment_mismatch/${order.id}`, 'critical', 'a payment does not match its order; check it with the provider', {
        orderId: order.id, reference: order.reference, invoiceId: o.invoiceId, expected: order.amount, observed: o.amount,
      });
      return { outcome: 'rejected', reason: 'amount_mismatch', orderId: order.id };
    }

    const now = clock.now();
    const evidence = JSON.stringify({ providerStatus: o.providerStatus, amount: o.amount, currency: o.currency, eventId: o.eventId ?? null });
    if (insertLedger.run(o.invoiceId, o.status, order.id, o.providerStatus, o.channel, now, evidence).changes === 0) {
      return { outcome: 'duplicate', orderId: order.id };
    }
    outbox.event('payment.observed', {
      orderId: order.id, reference: order.reference, invoiceId: o.invoiceId, status: o.status, channel: o.channel,
    });

    const refundEvidence = o.status === 'refunded' || o.status === 'partially_refunded' || o.status === 'canceled';
    // A payment of an earlier attempt's invoice: the order has moved on, so the money goes back.
    const staleAttempt = order.invoice_id !== o.invoiceId;
    if (staleAttempt) {
      let refundQueued = false;
      if (moneyStatus) {
        refundQueued = queueRefund(order, o.invoiceId, order.invoice_attempt, o.status === 'authorized' ? 'void' : 'refund', 'paid invoice of an earlier attempt', now);
      }
      return { outcome: 'recorded', orderId: order.id, from: order.state, to: null, vendQueued: false, refundQueued, refundEvidence };
    }

    const decision = decideObservation(order.state, o.status, order.capture_mode);
    let to: OrderState | null = null;
    if (decision.to && orders.transition(order.id, order.state, decision.to, `${o.status} seen by ${o.channel}`)) {
      to = decision.to;
      if (to === 'expired' || to === 'canceled') outbox.event(to === 'expired' ? 'order.expired' : 'order.canceled', { orderId: order.id, reference: order.reference, by: 'provider' });
      if (to === 'paid' || to === 'authorized') outbox.count('orders_paid');
    }
    let vendQueued = false;
    if (decision.queueVend && to) {
      vendQueued = insertVendJob.run(order.id, order.slot, now).changes === 1;
      if (vendQueued) outbox.event('vend.queued', { orderId: order.id, reference: order.reference, slot: order.slot });
    }
    let refundQueued = false;
    if (decision.refund && to === 'refunding') {
      refundQueued = queueRefund(order, o.invoiceId, order.attempt, decision.refund, `${o.status} after the order was ${order.state}`, now);
    }
    return { outcome: 'recorded', orderId: order.id, from: order.state, to, vendQueued, refundQueued, refundEvidence };
  }

  function queueRefund(order: { id: number; reference: string; amount: number }, invoiceId: string, attempt: number, kind: 'refund' | 'void', reason: string, now: number): boolean {
    return queueRefundFor({ db, outbox }, { ...order, invoiceId, attempt, kind, reason, now });
  }

  return {
    observe(observation) {
      const result = inTransaction(db, () => observeInTransaction(observation));
      if (result.outcome === 'recorded') {
        log.info({ orderId: result.orderId, invoiceId: observation.invoiceId, status: observation.status, channel: observation.channel, from: result.from, to: result.to }, 'payment observed');
      } else if (result.outcome === 'duplicate') {
        log.debug({ orderId: result.orderId, invoiceId: observation.invoiceId, status: observation.status, channel: observation.channel }, 'duplicate observation');
      }
      return result;
    },
  };
}
