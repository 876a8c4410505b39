import type { Db } from '../store/index.js';
import { inTransaction } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import type { Outbox } from '../outbox/index.js';
import { queueRefundFor } from './queue.js';
import { createTransitions, operatorMayRefund, refundKindOfOrder, type OrderRepository, type OrderRow } from '../orders/index.js';
import { createVendJobRepository } from './jobs.js';

/**
 * Fiscal receipts as vend/ sees them (src/fiscal/ implements it; app.ts passes it): each call runs
 * inside the caller's transaction and only writes the receipt row; the register is called later.
 */
export interface ReceiptPort {
  /** A vend delivered (or a person resolved it as delivered): its sale receipt is owed. */
  sold(order: OrderRow, soldAt: number): void;
  /** The order's money went back: the full return of its sale receipt is owed, if it has one. */
  refunded(orderId: number): void;
}

/** Settlement decisions, as the runner, `vendgate resolve` and the MQTT commands use them. */
export interface Settlement {
  /** Queues the money back for the order's own invoice (void for a held authorization). Caller owns the tx. */
  queueRefund(order: OrderRow, reason: string): void;
  /** The machine may or may not have delivered: a person decides (invariant 3). Caller owns the tx. */
  markUncertain(order: OrderRow, detail: string): void;
  /**
   * A person settles an uncertain vend: vended keeps the money, not vended gives it back. Throws
   * ORDER_NOT_FOUND, ORDER_STATE (not vend_uncertain).
   */
  resolve(orderId: number, vended: boolean, by?: string): OrderRow;
  /**
   * An operator gives the money back for a paid (not yet vended) or vended order. Throws
   * ORDER_NOT_FOUND, ORDER_STATE.
   */
  refund(orderId: number, by?: string): OrderRow;
}

/**
 * Decisions about a vend that are pure database work: queue a refund, park an uncertain vend, and a
 * person's settlement of one. Shared by the runner, the CLI (`vendgate resolve`) and MQTT commands.
 */
export function createSettlement(deps: {
  db: Db;
  clock: Clock;
  outbox: Outbox;
  orderRepository: OrderRepository;
  receipts?: Pick<ReceiptPort, 'sold'>;
}): Settlement {
  const { db, clock, outbox } = deps;
  const orders = deps.orderRepository;
  const transitions = createTransitions(orders);
  const jobs = createVendJobRepository(db);

  /** Queues the money back for the order's own invoice (void for a held authorization). Caller owns the tx. */
  function queueRefund(order: OrderRow, reason: string): void {
    queueRefundFor({ db, outbox }, { ...order, invoiceId: order.invoice_id!, kind: refundKindOfOrder(order), reason, now: clock.now() });
  }

  /** The machine may or may not have delivered: a person decides (invariant 3). Caller owns the tx. */
  function markUncertain(order: OrderRow, detail: string): void {
    jobs.finish(order.id, 'firing', 'uncertain', 'uncertain', detail, clock.now());
    transitions.vendUncertain(order, detail);
    outbox.event('vend.uncertain', { orderId: order.id, reference: order.reference, slot: order.slot, detail });
    outbox.raiseAlarm(
      `vend_uncertain/${order.id}`,
      'critical',
      'a paid vend may or may not have delivered: check the machine, then run vendgate resolve',
      {
        orderId: order.id,
        reference: order.reference,
        slot: order.slot,
        detail,
      },
    );
    outbox.count('vends_uncertain');
  }

  function mustGet(orderId: number): OrderRow {
    const order = orders.get(orderId);
    if (!order) throw new VendgateError(ErrorCodes.ORDER_NOT_FOUND, `no order ${orderId}`);
    return order;
  }

  return {
    queueRefund,
    markUncertain,

    /** A person settles an uncertain vend: vended keeps the money, not vended gives it back. */
    resolve(orderId: number, vended: boolean, by = 'operator'): OrderRow {
      inTransaction(db, () => {
        const order = mustGet(orderId);
        if (order.state !== 'vend_uncertain') {
          throw new VendgateError(ErrorCodes.ORDER_STATE, `order ${orderId} is ${order.state}; only vend_uncertain orders are resolved`);
        }
        jobs.finish(orderId, 'uncertain', 'resolved', vended ? 'resolved_vended' : 'resolved_not_vended', by, clock.now());
        if (vended) {
          transitions.resolvedAsVended(order, by);
          deps.receipts?.sold(order, clock.now());
          if (order.capture_mode === 'manual') jobs.setCapture(orderId, 'pending');
        } else {
          transitions.resolvedAsNotVended(order, by);
          queueRefund(order, `not vended (resolved by ${by})`);
        }
        outbox.clearAlarm(`vend_uncertain/${orderId}`);
        outbox.event('vend.resolved', { orderId, reference: order.reference, vended, by });
      });
      return orders.get(orderId)!;
    },

    /** An operator gives the money back for a paid (not yet vended) or vended order. */
    refund(orderId: number, by = 'operator'): OrderRow {
      inTransaction(db, () => {
        const order = mustGet(orderId);
        if (!operatorMayRefund(order.state)) {
          throw new VendgateError(ErrorCodes.ORDER_STATE, `order ${orderId} is ${order.state}; only paid or vended orders can be refunded`);
        }
        transitions.refundRequested(order, by);
        queueRefund(order, `requested by ${by}`);
      });
      return orders.get(orderId)!;
    },
  };
}
