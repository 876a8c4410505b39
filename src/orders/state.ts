/**
 * The order state machine. Pure: no I/O, no clock. Every state change in the database goes through
 * `canTransition`, so "never backwards" (invariant 5) is enforced in one place. What moves an order
 * (and every other money rule) is decided in `decide.ts`; the moves themselves are `transitions.ts`.
 */
/** Every state an order can be in: the one list (the CLI's --state, the MQTT contract's order view read it). */
export const ORDER_STATES = [
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
] as const;

export type OrderState = (typeof ORDER_STATES)[number];

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
  // An operator may refund a vended order (complaint); refunded: the provider confirms a refund made
  // elsewhere after the vend (the merchant's dashboard).
  vended: ['refunding', 'refunded'],
  refunding: ['refunded'],
  // A late payment on a closed order is refunded, never lost. vend_uncertain: the order came back
  // with a restored database, whose close a power cut may have taken away after the backup, so the
  // goods may have left since: a person decides (vendgate resolve).
  canceled: ['refunding', 'refunded', 'vend_uncertain'],
  expired: ['refunding', 'refunded', 'vend_uncertain'],
  failed: ['refunding', 'refunded', 'vend_uncertain'],
  refunded: [],
};

export function canTransition(from: OrderState, to: OrderState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function allowedTransitions(from: OrderState): readonly OrderState[] {
  return TRANSITIONS[from];
}
