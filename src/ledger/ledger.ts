import type { Db } from '../store/index.js';
import { inTransaction, prepared, restoredBoundary } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import type { Observation } from '../payments/types.js';
import {
  answerRuleFor,
  createTransitions,
  decideObservation,
  isFinalReading,
  isMoneyStatus,
  isRefundEvidence,
  refundKindOfReading,
  type ObservePort,
  type OurQuestion,
  type ObserveResult,
  type OrderRepository,
  type OrderState,
  createPaymentWindows,
  type PaymentWindows,
} from '../orders/index.js';
import { queueRefundFor, queueVendFor, refundExists } from '../vend/queue.js';
import type { ReceiptPort } from '../vend/index.js';

export { observationOf, type Channel, type Observation } from '../payments/types.js';
export type { ObserveResult } from '../orders/index.js';

/**
 * The ledger: the real `ObservePort` (orders/observe-port.ts), the single merge point of every
 * reading. money/ gives it to the order service and the refund worker, which do not import it.
 */
export type Ledger = ObservePort;

const NO_DECISION = { to: null, queueVend: false, refund: null, alarm: null } as const;

export interface LedgerSettings {
  /** A payment first seen this long after the QR expired is refunded: the customer has gone. */
  lateVendMs: number;
}

/** The alarm each decided alarm raises: its name (with `/<order id>`), severity, message and log line. */
const OBSERVATION_ALARMS = {
  payment_mismatch: {
    name: 'payment_mismatch',
    severity: 'critical',
    message: 'a payment did not match its order: it was not vended and is being refunded; check it with the provider',
    log: 'paid amount differs from the order: not vended, refunded',
  },
  restored_closed_paid: {
    name: 'vend_uncertain',
    severity: 'critical',
    message:
      'restored database: this order was closed in the backup but is paid, and may have been vended after the backup was taken; check the machine, then run vendgate resolve',
    log: 'restored database: a payment on an order it holds closed; parked for a person',
  },
  refunded_after_vend: {
    name: 'refunded_after_vend',
    severity: 'warning',
    message:
      'the provider confirms a refund of a sale whose goods went out (made elsewhere, e.g. the dashboard): the order is refunded and a receipted sale gets its return; check why, then close it with vendgate settle',
    log: 'refunded at the provider after the vend',
  },
  refunded_elsewhere: {
    name: 'refunded_elsewhere',
    severity: 'warning',
    message: 'an order was refunded at the provider before it was vended: nothing was vended, any rest is refunded',
    log: 'refunded at the provider before the vend: not vended',
  },
} as const satisfies Record<string, { name: string; severity: 'critical' | 'warning'; message: string; log: string }>;

export function createLedger(
  /** windows: the customer's payment window on this device's own clocks (orders/window.ts), for "too late". */
  deps: {
    db: Db;
    clock: Clock;
    logger: Logger;
    outbox: Outbox;
    orderRepository: OrderRepository;
    windows?: PaymentWindows;
    /** Fiscal receipts: a refund confirmed after a receipted vend owes its return (written in the same transaction). */
    receipts?: Pick<ReceiptPort, 'refunded'>;
  },
  settings: LedgerSettings = { lateVendMs: 120_000 },
): Ledger {
  const { db, clock, outbox } = deps;
  const log = deps.logger.child({ module: 'ledger' });
  const orders = deps.orderRepository;
  const transitions = createTransitions(orders);
  const windows = deps.windows ?? createPaymentWindows({ db, clock }, { defaultTtlSec: 120 });
  const isRestoredOrder = (orderId: number) => {
    const boundary = restoredBoundary(db, 'orders');
    return boundary !== null && orderId <= boundary;
  };

  function observeInTransaction(observation: Observation, question?: OurQuestion): ObserveResult {
    const o = { ...observation, refundedAmount: observation.refundedAmount ?? 0 };
    const order = orders.getByInvoice(o.invoiceId);
    if (!order) return { outcome: 'unknown_invoice' };

    // Invariant 2: a test payment never pays for a live order, nor the reverse. Written nowhere.
    if (o.livemode !== (order.livemode === 1)) {
      log.warn({ orderId: order.id, invoiceId: o.invoiceId, livemode: o.livemode }, 'observation livemode differs from the order: ignored');
      return { outcome: 'rejected', reason: 'livemode_mismatch', orderId: order.id };
    }

    const now = clock.now();
    // Following stops at the provider's final answer (the poller reads until then).
    if (isFinalReading(o.status, now, order.invoice_id === o.invoiceId ? order.expires_at : null))
      orders.markInvoiceSettled(o.invoiceId, now);
    const evidence = JSON.stringify({
      providerStatus: o.providerStatus,
      amount: o.amount,
      currency: o.currency,
      refundedAmount: o.refundedAmount,
      eventId: o.eventId ?? null,
    });
    const inserted =
      prepared(
        db,
        `INSERT INTO invoice_status_ledger (invoice_id, status, order_id, provider_status, channel, observed_at, evidence)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      ).run(o.invoiceId, o.status, order.id, o.providerStatus, o.channel, now, evidence).changes === 1;
    // A status seen before decides nothing again, unless the reading answers a question of ours.
    if (!inserted && !question) return { outcome: 'duplicate', orderId: order.id };
    if (inserted)
      outbox.event('payment.observed', {
        orderId: order.id,
        reference: order.reference,
        invoiceId: o.invoiceId,
        status: o.status,
        channel: o.channel,
      });
    const refundEvidence = isRefundEvidence(o.status);
    const moneyStatus = isMoneyStatus(o.status);

    // A payment of an earlier attempt's invoice: the order has moved on, so the money goes back.
    if (order.invoice_id !== o.invoiceId) {
      if (!inserted) return { outcome: 'duplicate', orderId: order.id };
      const rest = o.amount - o.refundedAmount;
      const refundQueued =
        moneyStatus &&
        rest > 0 &&
        queueRefundFor(
          { db, outbox },
          {
            ...order,
            invoiceId: o.invoiceId,
            attempt: order.invoice_attempt,
            amount: rest,
            kind: refundKindOfReading(o.status),
            reason: 'paid invoice of an earlier attempt',
            now,
          },
        );
      return { outcome: 'recorded', orderId: order.id, from: order.state, to: null, vendQueued: false, refundQueued, refundEvidence };
    }

    const facts = {
      status: o.status,
      providerStatus: o.providerStatus,
      captureMode: order.capture_mode,
      amountMatches: o.amount === order.amount && o.currency === order.currency,
      paidAmount: o.amount,
      refundedAmount: o.refundedAmount,
      // On this device's own clocks from the moment the QR could be shown: neither a provider's Date
      // header nor a device clock hours off moves the moment the customer is taken to have gone.
      tooLateToServe: (windows.leftMs(order) ?? 0) < -settings.lateVendMs,
      restoredOrder: isRestoredOrder(order.id),
    };
    const answer = question ? answerRuleFor(order.state, facts, question) : null;
    if (!answer && !inserted) return { outcome: 'duplicate', orderId: order.id };
    const decision = answer ? { ...NO_DECISION, to: answer.to } : decideObservation(order.state, facts);
    const history = answer ? answer.history : `${o.status} seen by ${o.channel}${decision.refund ? `: ${decision.refund.reason}` : ''}`;
    let to: OrderState | null = null;
    if (decision.to && transitions.byReading(order, decision.to, history)) {
      to = decision.to;
      if (to === 'expired' || to === 'canceled')
        outbox.event(to === 'expired' ? 'order.expired' : 'order.canceled', {
          orderId: order.id,
          reference: order.reference,
          // Closed at our request: the reason we asked; otherwise the provider closed it.
          ...(question?.kind === 'close' && answer ? { reason: question.reason } : { by: 'provider' }),
        });
      if (to === 'paid' || to === 'authorized') outbox.count('orders_paid');
      // Like the device's own refunds: the return of the sale receipt, once (the book keeps one per order).
      if (to === 'refunded' && order.state === 'vended') deps.receipts?.refunded(order.id);
    }
    const vendQueued = decision.queueVend && to !== null && queueVendFor({ db, outbox }, order, now);
    const refundQueued =
      decision.refund !== null &&
      to === 'refunding' &&
      !refundExists(db, o.invoiceId) &&
      queueRefundFor(
        { db, outbox },
        {
          ...order,
          invoiceId: o.invoiceId,
          attempt: order.attempt,
          kind: decision.refund.kind,
          amount: decision.refund.amount,
          reason: decision.refund.reason,
          now,
        },
      );
    // An alarm of a row that moves the order is raised when it moved; one of a row that moves nothing, when the reading is new.
    if (decision.alarm && (to !== null || decision.to === null)) raiseAlarm(decision.alarm, order, o);
    return { outcome: 'recorded', orderId: order.id, from: order.state, to, vendQueued, refundQueued, refundEvidence };
  }

  function raiseAlarm(
    alarm: keyof typeof OBSERVATION_ALARMS,
    order: { id: number; reference: string; amount: number; currency: string },
    o: Observation,
  ): void {
    const detail = {
      orderId: order.id,
      reference: order.reference,
      invoiceId: o.invoiceId,
      expected: order.amount,
      paid: o.amount,
      currency: o.currency,
      refunded: o.refundedAmount,
    };
    const { name, severity, message, log: said } = OBSERVATION_ALARMS[alarm];
    log[severity === 'critical' ? 'error' : 'warn'](detail, said);
    outbox.raiseAlarm(`${name}/${order.id}`, severity, message, detail);
  }

  return {
    observe(observation, question) {
      const result = inTransaction(db, () => observeInTransaction(observation, question));
      if (result.outcome === 'recorded') {
        log.info(
          {
            orderId: result.orderId,
            invoiceId: observation.invoiceId,
            status: observation.status,
            channel: observation.channel,
            from: result.from,
            to: result.to,
          },
          'payment observed',
        );
      } else if (result.outcome === 'duplicate') {
        log.debug(
          { orderId: result.orderId, invoiceId: observation.invoiceId, status: observation.status, channel: observation.channel },
          'duplicate observation',
        );
      }
      return result;
    },
  };
}
