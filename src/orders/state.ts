import type { CanonicalStatus } from '../payments/types.js';

/**
 * The order state machine. Pure: no I/O, no clock. Every state change in the database goes through
 * `canTransition`, so "never backwards" (invariant 5) is enforced in one place.
 */
export type OrderState =
  | 'creating' | 'awaiting_payment' | 'paid' | 'authorized' | 'vending' | 'vended' | 'vend_failed'
  | 'vend_uncertain' | 'refunding' | 'refunded' | 'canceled' | 'expired' | 'failed';

export const ORDER_STATES: readonly OrderState[] = [
  'creating', 'awaiting_payment', 'paid', 'authorized', 'vending', 'vended', 'vend_failed',
  'vend_uncertain', 'refunding', 'refunded', 'canceled', 'expired', 'failed',
];

const TRANSITIONS: Record<OrderState, readonly OrderState[]> = {
  creating: ['awaiting_payment', 'failed', 'canceled', 'expired'],
  awaiting_payment: ['paid', 'authorized', 'canceled', 'expired'],
  paid: ['vending', 'refunding'],
  authorized: ['vending', 'refunding'],
  vending: ['vended', 'vend_failed', 'vend_uncertain'],
  vend_failed: ['refunding'],
  vend_uncertain: ['vended', 'refunding'],
  // An operator may refund a vended order (complaint); nothing else leaves `vended`.
  vended: ['refunding'],
  refunding: ['refunded'],
  // A late payment on a closed order is refunded, never lost.
  canceled: ['refunding'],
  expired: ['refunding'],
  failed: ['refunding'],
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

/** What an observation of the provider's status means for an order in a given state. */
export interface ObservationDecision {
  to: OrderState | null;
  queueVend: boolean;
  /** `refund` gives paid money back; `void` cancels a held authorization (manual capture). */
  refund: 'refund' | 'void' | null;
}

const NOTHING: ObservationDecision = { to: null, queueVend: false, refund: null };

/**
 * Decides by the current status, never by event type or arrival order (seed 000, rule 5). A status
 * that does not move the order forward decides nothing.
 */
export function decideObservation(
  state: OrderState,
  status: CanonicalStatus,
  captureMode: 'automatic' | 'manual',
): ObservationDecision {
  // An order in `creating` has no invoice on file yet, so nothing can be observed for it.
  const waiting = state === 'awaiting_payment';
  const closedUnpaid = state === 'canceled' || state === 'expired' || state === 'failed';
  switch (status) {
    case 'pending':
      return NOTHING;
    case 'authorized':
      // Held money only counts in manual-capture mode; in automatic mode wait for `paid`.
      if (waiting && captureMode === 'manual') return { ...NOTHING, to: 'authorized', queueVend: true };
      if (closedUnpaid) return { ...NOTHING, to: 'refunding', refund: 'void' };
      return NOTHING;
    case 'paid':
      if (waiting) return { ...NOTHING, to: 'paid', queueVend: true };
      if (closedUnpaid) return { ...NOTHING, to: 'refunding', refund: 'refund' };
      return NOTHING;
    case 'canceled':
    case 'expired':
      if (waiting) return { ...NOTHING, to: status };
      return NOTHING;
    case 'refunded':
    case 'partially_refunded':
      // Recorded; the refund worker, which owns refunds, completes the order from this evidence.
      return NOTHING;
  }
}
