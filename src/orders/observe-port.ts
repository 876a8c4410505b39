import type { Observation } from '../payments/index.js';
import type { OurQuestion } from './decide.js';
import type { OrderState } from './state.js';

/**
 * What recording one observation did (the ledger's answer). Declared here, below the ledger, so
 * that the order service and the refund worker take an `observe` port without importing the
 * ledger: money/ composes them with the real one.
 */
export type ObserveResult =
  | { outcome: 'unknown_invoice' }
  | { outcome: 'rejected'; reason: 'livemode_mismatch'; orderId: number }
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

/** The port through which a reading of the provider changes an order: the ledger's observe(). */
export interface ObservePort {
  /**
   * The only function that moves an order because of money. One synchronous transaction: records
   * (invoice, status) once, applies the decision of the observation table (orders/decide.ts),
   * queues the vend or the refund, and writes the outbox rows. Safe to call any number of times
   * from any channel, in any order. `question`: the reading answers a question of ours (our cancel,
   * an interrupted vend, a refund of ours); its rows (ANSWER_RULES) decide first, even when the
   * status was recorded before.
   */
  observe(observation: Observation, question?: OurQuestion): ObserveResult;
}
