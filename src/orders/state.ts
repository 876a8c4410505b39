import type { CanonicalStatus } from '../payments/types.js';

/**
 * The order state machine. Pure: no I/O, no clock. Every state change in the database goes through
 * `canTransition`, so "never backwards" (invariant 5) is enforced in one place.
 */
export type OrderState =
  | 'creating'
  | 'awaiting_payment'
  | 'paid'
  | 'authorized'
  | 'vending'
  | 'vended'
  | 'vend_failed'
  | 'vend_uncertain'
  | 'refunding'
  | 'refunded'
  | 'canceled'
  | 'expired'
  | 'failed';

export const ORDER_STATES: readonly OrderState[] = [
  'creating',
  'awaiting_payment',
  'paid',
  'authorized',
  'vending',
  'vended',
  'vend_failed',
  'vend_uncertain',
  'refunding',
  'refunded',
  'canceled',
  'expired',
  'failed',
];

const TRANSITIONS: Record<OrderState, readonly OrderState[]> = {
  creating: ['awaiting_payment', 'failed', 'canceled', 'expired'],
  // refunding: paid with the wrong amount, or too late to serve; refunded: the money went back elsewhere.
  awaiting_payment: ['paid', 'authorized', 'canceled', 'expired', 'refunding', 'refunded'],
  paid: ['vending', 'refunding', 'refunded'],
  authorized: ['vending', 'refunding', 'refunded'],
  // refunded: a vend interrupted by a restart whose invoice the provider shows refunded already.
  vending: ['vended', 'vend_failed', 'vend_uncertain', 'refunded'],
  vend_failed: ['refunding'],
  // refunded: recovery found the invoice already refunded (or voided) at the provider.
  vend_uncertain: ['vended', 'refunding', 'refunded'],
  // An operator may refund a vended order (complaint); nothing else leaves `vended`.
  vended: ['refunding'],
  refunding: ['refunded'],
  // A late payment on a closed order is refunded, never lost.
  canceled: ['refunding', 'refunded'],
  expired: ['refunding', 'refunded'],
  failed: ['refunding', 'refunded'],
  refunded: [],
};

export function canTransition(from: OrderState, to: OrderState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function allowedTransitions(from: OrderState): readonly OrderState[] {
  return TRANSITIONS[from];
}

/** States in which an order still waits for the customer's money. */
export const OPEN_STATES: readonly OrderState[] = ['creating', 'awaiting_payment'];
/** States in which money was taken and goods are on their way. */
export const IN_PROGRESS_STATES: readonly OrderState[] = ['paid', 'authorized', 'vending'];
/** States nothing automatic will leave. */
export const FINAL_STATES: readonly OrderState[] = ['vended', 'refunded', 'canceled', 'expired', 'failed', 'vend_uncertain'];

export function isOpen(state: OrderState): boolean {
  return OPEN_STATES.includes(state);
}

/** What the ledger knows of one reading of an invoice, besides its status. */
export interface ObservationFacts {
  status: CanonicalStatus;
  captureMode: 'automatic' | 'manual';
  /** The money matches the order: amount and currency (livemode is checked before: never recorded). */
  amountMatches: boolean;
  /** What the customer paid, as the provider says. */
  paidAmount: number;
  /** What was already refunded at the provider, by anyone. */
  refundedAmount: number;
  /** The payment is seen so long after the QR expired that the customer has gone: give it back. */
  tooLateToServe: boolean;
  /**
   * The order came back with a restored database: goods may have left after the backup was taken,
   * so neither a vend nor a refund is automatic. It goes to the vend queue, where the runner parks
   * it for a person (`vend_uncertain`) instead of firing.
   */
  restoredOrder?: boolean;
}

/** What an observation of the provider's status means for an order in a given state. */
export interface ObservationDecision {
  to: OrderState | null;
  queueVend: boolean;
  /** `refund` gives paid money back; `void` cancels a held authorization (manual capture). */
  refund: { kind: 'refund' | 'void'; amount: number; reason: string } | null;
  /** Something a person should know about, with the order. */
  alarm: 'payment_mismatch' | 'refunded_elsewhere' | null;
}

const NOTHING: ObservationDecision = { to: null, queueVend: false, refund: null, alarm: null };

/**
 * The one place that chooses vend / refund / void / wait. Decides by the current status and the
 * invoice's refunds, never by event type or arrival order (seed 000, rule 5). A status that does
 * not move the order forward decides nothing.
 */
export function decideObservation(state: OrderState, facts: ObservationFacts): ObservationDecision {
  // An order in `creating` has no invoice on file yet, so nothing can be observed for it.
  const waiting = state === 'awaiting_payment';
  const closedUnpaid = state === 'canceled' || state === 'expired' || state === 'failed';
  // Money taken, goods not yet on their way: a vend job may be queued but is not claimed.
  const beforeVend = state === 'paid' || state === 'authorized';
  const rest = facts.paidAmount - facts.refundedAmount;
  switch (facts.status) {
    case 'pending':
      return NOTHING;
    case 'authorized':
    case 'paid': {
      const held = facts.status === 'authorized';
      // Held money only counts in manual-capture mode; in automatic mode wait for `paid`.
      if (held && facts.captureMode !== 'manual' && waiting) return NOTHING;
      const kind = held ? 'void' : 'refund';
      if (waiting && facts.restoredOrder) return { ...NOTHING, to: held ? 'authorized' : 'paid', queueVend: true };
      if (waiting && !facts.amountMatches) {
        return {
          to: 'refunding',
          queueVend: false,
          refund: { kind, amount: facts.paidAmount, reason: 'the payment does not match the order' },
          alarm: 'payment_mismatch',
        };
      }
      if (waiting && facts.tooLateToServe) {
        return {
          ...NOTHING,
          to: 'refunding',
          refund: { kind, amount: facts.paidAmount, reason: 'paid long after the QR expired: the customer has gone' },
        };
      }
      if (waiting) return { ...NOTHING, to: held ? 'authorized' : 'paid', queueVend: true };
      if (closedUnpaid)
        return {
          ...NOTHING,
          to: 'refunding',
          refund: { kind, amount: facts.paidAmount, reason: `${facts.status} after the order was ${state}` },
        };
      return NOTHING;
    }
    case 'canceled':
    case 'expired':
      if (waiting) return { ...NOTHING, to: facts.status };
      return NOTHING;
    case 'partially_refunded':
      // A restored order may have been delivered after the backup: a person decides (see restoredOrder).
      if (waiting && facts.restoredOrder) return { ...NOTHING, to: 'paid', queueVend: true };
      // Refunded in part elsewhere before any goods left: nothing is vended, the rest goes back.
      if ((waiting || closedUnpaid || beforeVend) && rest > 0) {
        return {
          to: 'refunding',
          queueVend: false,
          refund: { kind: 'refund', amount: rest, reason: 'partly refunded elsewhere before the vend: the rest goes back' },
          alarm: 'refunded_elsewhere',
        };
      }
      return NOTHING;
    case 'refunded':
      // The money already went back (the merchant's dashboard): never vend for it.
      if (waiting || closedUnpaid || beforeVend) return { ...NOTHING, to: 'refunded', alarm: 'refunded_elsewhere' };
      // Otherwise recorded; the refund worker, which owns refunds, completes the order from this evidence.
      return NOTHING;
  }
}

/**
 * What a create answer is to the attempt that sent it. `identityMismatch` is why the answer is not
 * the invoice of this attempt's request (another reference, amount, currency, livemode or
 * description; created or expired before the order), or null when it is.
 */
export interface CreateAnswerFacts {
  identityMismatch: string | null;
  status: CanonicalStatus;
}

export type CreateAnswerDecision =
  /** The invoice this attempt made, not paid yet: attach it and show its QR. */
  | { kind: 'attach' }
  /**
   * Our own key is ours: the answer carries this attempt's exact key and nonce'd reference but is
   * already paid or refunded, so its QR was shown and its record lost (a power cut after the 201, a
   * card the kernel turned read-only). It is attached and followed like any other invoice — the
   * ledger vends it inside the window, refunds it after, parks it for a person on a restored
   * database — with an alarm that says what happened. Never a new attempt: that abandons the money.
   */
  | { kind: 'attach_seen_already' }
  /** Another request's invoice (a key used before under other terms): never vended, a new attempt. */
  | { kind: 'foreign'; reason: string };

/** The "our own key is ours" row: decides by identity first, then by status. Pure. */
export function decideCreateAnswer(facts: CreateAnswerFacts): CreateAnswerDecision {
  if (facts.identityMismatch !== null) return { kind: 'foreign', reason: facts.identityMismatch };
  if (facts.status === 'pending' || facts.status === 'canceled' || facts.status === 'expired') return { kind: 'attach' };
  return { kind: 'attach_seen_already' };
}

/**
 * Whether a reading is the provider's final answer on an invoice: nothing further can happen to it
 * without a refund of ours. Until then the invoice is followed, whatever local timers say.
 * `canceled` is final only after the expiry (QutPay: a QR may still be paid until expiresAt).
 */
export function isFinalReading(status: CanonicalStatus, readAt: number, expiresAt: number | null): boolean {
  switch (status) {
    case 'pending':
      return false;
    case 'canceled':
      return expiresAt === null || readAt >= expiresAt;
    default:
      return true;
  }
}
