import { ErrorCodes } from '../util/errors.js';
import type { OrderRepository, OrderRow } from './repository.js';
import type { OrderState } from './state.js';

/**
 * Every move of an order, by name: the only callers of `OrderRepository.transition()`. A reading of
 * the provider moves an order only through the ledger's `observe()` (`byReading`, which applies the
 * decision of orders/decide.ts); the service's own steps, vend outcomes and operators' actions use
 * the other names. Each returns false when the order was no longer where the move starts (someone
 * moved it first) and throws TransitionRefused for a move the state table forbids. The caller owns
 * the transaction.
 */
export interface Transitions {
  /** creating → awaiting_payment: the invoice is on file (a replayed key: recovered). */
  invoiceAttached(order: OrderRow, replayed: boolean): boolean;
  /** creating → failed: no invoice (the provider refused or could not be reached). */
  creationFailed(order: OrderRow, code: string, message: string): boolean;
  /** What a reading decided (orders/decide.ts): only the ledger's observe() calls this. */
  byReading(order: OrderRow, to: OrderState, history: string): boolean;
  /** paid / authorized → vending: the claim before the actuator is touched. */
  vendClaimed(order: OrderRow): boolean;
  /** paid / authorized → vending, to be parked at once: a restored database's order is never fired. */
  vendClaimedForAPerson(order: OrderRow): boolean;
  /** vending → vended: the goods went (or nobody passed and the policy keeps the fare). */
  vendDelivered(order: OrderRow, result: string): boolean;
  /** vending → vend_failed → refunding: nothing came out for sure, the money goes back. */
  vendFailed(order: OrderRow, detail: string): boolean;
  /** vending → vend_uncertain: the machine may or may not have delivered, a person decides. */
  vendUncertain(order: OrderRow, detail: string): boolean;
  /** vend_uncertain → vended: a person says the goods went. */
  resolvedAsVended(order: OrderRow, by: string): boolean;
  /** vend_uncertain → refunding: a person says nothing came out. */
  resolvedAsNotVended(order: OrderRow, by: string): boolean;
  /** paid / authorized / vended → refunding: an operator gives the money back. */
  refundRequested(order: OrderRow, by: string): boolean;
  /** refunding → refunded: the provider answered our refund (or void) as done. */
  refundCompleted(order: OrderRow, detail: string): boolean;
}

export function createTransitions(repo: Pick<OrderRepository, 'transition'>): Transitions {
  return {
    invoiceAttached: (order, replayed) =>
      repo.transition(order.id, 'creating', 'awaiting_payment', replayed ? 'invoice recovered (replayed key)' : 'invoice created'),
    creationFailed: (order, code, message) =>
      repo.transition(order.id, 'creating', 'failed', message, { errorCode: code, errorMessage: message }),
    byReading: (order, to, history) => repo.transition(order.id, order.state, to, history),
    vendClaimed: (order) => repo.transition(order.id, order.state, 'vending', 'vend claimed'),
    vendClaimedForAPerson: (order) => repo.transition(order.id, order.state, 'vending', 'vend claimed for a person: restored database'),
    vendDelivered: (order, result) =>
      repo.transition(order.id, 'vending', 'vended', result === 'vended' ? 'vend succeeded' : 'nobody passed; policy keeps the fare'),
    vendFailed: (order, detail) =>
      repo.transition(order.id, 'vending', 'vend_failed', detail, { errorCode: ErrorCodes.VEND_FAILED, errorMessage: detail }) &&
      repo.transition(order.id, 'vend_failed', 'refunding', 'vend failed: money goes back'),
    vendUncertain: (order, detail) =>
      repo.transition(order.id, 'vending', 'vend_uncertain', detail, { errorCode: ErrorCodes.VEND_UNCERTAIN, errorMessage: detail }),
    resolvedAsVended: (order, by) => repo.transition(order.id, 'vend_uncertain', 'vended', `resolved as vended by ${by}`),
    resolvedAsNotVended: (order, by) => repo.transition(order.id, 'vend_uncertain', 'refunding', `resolved as not vended by ${by}`),
    refundRequested: (order, by) => repo.transition(order.id, order.state, 'refunding', `refund requested by ${by}`),
    refundCompleted: (order, detail) => repo.transition(order.id, 'refunding', 'refunded', detail),
  };
}
