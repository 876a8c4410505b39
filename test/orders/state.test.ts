import { describe, expect, it } from 'vitest';
import {
  canTransition,
  decideObservation,
  isFinalReading,
  ORDER_STATES,
  allowedTransitions,
  type ObservationFacts,
  type OrderState,
} from '../../src/orders/index.js';
import { CANONICAL_STATUSES, type CanonicalStatus } from '../../src/payments/types.js';

/** The intended flow, written out independently of the table in src/. */
const ALLOWED: [OrderState, OrderState][] = [
  ['creating', 'awaiting_payment'],
  ['creating', 'failed'],
  ['creating', 'canceled'],
  ['creating', 'expired'],
  ['awaiting_payment', 'paid'],
  ['awaiting_payment', 'authorized'],
  ['awaiting_payment', 'canceled'],
  ['awaiting_payment', 'expired'],
  ['paid', 'vending'],
  ['paid', 'refunding'],
  ['authorized', 'vending'],
  ['authorized', 'refunding'],
  ['vending', 'vended'],
  ['vending', 'vend_failed'],
  ['vending', 'vend_uncertain'],
  ['vend_failed', 'refunding'],
  ['vend_uncertain', 'vended'],
  ['vend_uncertain', 'refunding'],
  ['vended', 'refunding'],
  ['refunding', 'refunded'],
  ['canceled', 'refunding'],
  ['expired', 'refunding'],
  ['failed', 'refunding'],
  // The money went back (or must) before any goods left: wrong amount, too late, refunded elsewhere.
  ['awaiting_payment', 'refunding'],
  ['awaiting_payment', 'refunded'],
  ['paid', 'refunded'],
  ['authorized', 'refunded'],
  ['canceled', 'refunded'],
  // A restored database: a payment on an order it holds closed goes to a person.
  ['canceled', 'vend_uncertain'],
  ['expired', 'vend_uncertain'],
  ['failed', 'vend_uncertain'],
  ['expired', 'refunded'],
  ['failed', 'refunded'],
  // Recovery found the invoice refunded at the provider: an interrupted vend is not parked.
  ['vending', 'refunded'],
  ['vend_uncertain', 'refunded'],
  // The provider confirms a refund made elsewhere after the vend (the merchant's dashboard).
  ['vended', 'refunded'],
];

describe('order state table', () => {
  it.each(ALLOWED)('allows %s → %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it('refuses every transition not in the flow, including every move backwards', () => {
    const allowed = new Set(ALLOWED.map(([a, b]) => `${a}>${b}`));
    let refused = 0;
    for (const from of ORDER_STATES) {
      for (const to of ORDER_STATES) {
        if (allowed.has(`${from}>${to}`)) continue;
        expect(canTransition(from, to), `${from} → ${to}`).toBe(false);
        refused++;
      }
    }
    expect(refused).toBe(ORDER_STATES.length ** 2 - ALLOWED.length);
  });

  it('never lets an order that was vended or refunded go back to taking or holding money', () => {
    for (const to of ['creating', 'awaiting_payment', 'paid', 'authorized', 'vending'] as const) {
      expect(canTransition('vended', to)).toBe(false);
      expect(canTransition('refunded', to)).toBe(false);
    }
    expect(allowedTransitions('refunded')).toEqual([]);
  });
});

const facts = (
  status: CanonicalStatus,
  captureMode: 'automatic' | 'manual' = 'automatic',
  extra: Partial<ObservationFacts> = {},
): ObservationFacts => ({
  status,
  captureMode,
  amountMatches: true,
  paidAmount: 1500,
  refundedAmount: 0,
  tooLateToServe: false,
  ...extra,
});

describe('deciding on an observed status', () => {
  it('queues a vend when an awaiting order is paid', () => {
    expect(decideObservation('awaiting_payment', facts('paid'))).toEqual({ to: 'paid', queueVend: true, refund: null, alarm: null });
  });

  it('vends on an authorization only in manual-capture mode', () => {
    expect(decideObservation('awaiting_payment', facts('authorized', 'manual'))).toMatchObject({ to: 'authorized', queueVend: true });
    expect(decideObservation('awaiting_payment', facts('authorized', 'automatic'))).toMatchObject({ to: null, queueVend: false });
  });

  it('refunds a payment that arrives after the order was closed, never vends it', () => {
    for (const closed of ['canceled', 'expired', 'failed'] as const) {
      expect(decideObservation(closed, facts('paid'))).toMatchObject({
        to: 'refunding',
        queueVend: false,
        refund: { kind: 'refund', amount: 1500 },
      });
      expect(decideObservation(closed, facts('authorized', 'manual'))).toMatchObject({
        to: 'refunding',
        queueVend: false,
        refund: { kind: 'void' },
      });
    }
  });

  it('refunds a payment of the wrong amount, with an alarm, and never vends it', () => {
    expect(decideObservation('awaiting_payment', facts('paid', 'automatic', { amountMatches: false, paidAmount: 999 }))).toMatchObject({
      to: 'refunding',
      queueVend: false,
      refund: { kind: 'refund', amount: 999 },
      alarm: 'payment_mismatch',
    });
    expect(decideObservation('awaiting_payment', facts('authorized', 'manual', { amountMatches: false }))).toMatchObject({
      to: 'refunding',
      queueVend: false,
      refund: { kind: 'void' },
      alarm: 'payment_mismatch',
    });
  });

  it('refunds a payment seen long after the QR expired instead of vending to nobody', () => {
    expect(decideObservation('awaiting_payment', facts('paid', 'automatic', { tooLateToServe: true }))).toMatchObject({
      to: 'refunding',
      queueVend: false,
      refund: { kind: 'refund', amount: 1500 },
    });
  });

  it('takes a refund made elsewhere before the vend as evidence: nothing is vended, the rest goes back', () => {
    for (const state of ['awaiting_payment', 'paid', 'authorized', 'canceled', 'expired', 'failed'] as const) {
      expect(decideObservation(state, facts('refunded')), state).toMatchObject({
        to: 'refunded',
        queueVend: false,
        refund: null,
        alarm: 'refunded_elsewhere',
      });
      expect(decideObservation(state, facts('partially_refunded', 'automatic', { refundedAmount: 500 })), state).toMatchObject({
        to: 'refunding',
        queueVend: false,
        refund: { kind: 'refund', amount: 1000 },
        alarm: 'refunded_elsewhere',
      });
    }
    // Goods on their way, or a refund of ours in flight: recorded only (reconciliation tells a person).
    for (const state of ['vending', 'vend_uncertain', 'refunding'] as const) {
      expect(decideObservation(state, facts('refunded')), state).toEqual({ to: null, queueVend: false, refund: null, alarm: null });
    }
    // Goods out: the confirmed refund is the order's end, with an alarm for a person (and its fiscal return).
    expect(decideObservation('vended', facts('refunded'))).toEqual({
      to: 'refunded',
      queueVend: false,
      refund: null,
      alarm: 'refunded_after_vend',
    });
  });

  it('an order a restored database brought back is never vended or refunded by itself: it is queued for the runner to park', () => {
    for (const status of ['paid', 'partially_refunded'] as const) {
      expect(
        decideObservation(
          'awaiting_payment',
          facts(status, 'automatic', { restoredOrder: true, tooLateToServe: true, refundedAmount: status === 'paid' ? 0 : 500 }),
        ),
      ).toEqual({ to: 'paid', queueVend: true, refund: null, alarm: null });
    }
    expect(decideObservation('awaiting_payment', facts('paid', 'automatic', { restoredOrder: true, amountMatches: false }))).toMatchObject({
      to: 'paid',
      queueVend: true,
    });
  });

  it('ignores a late pending, canceled or expired on an order that was already paid', () => {
    for (const state of ['paid', 'vending', 'vended', 'refunding', 'refunded', 'vend_uncertain'] as const) {
      for (const status of ['pending', 'canceled', 'expired'] as const) {
        expect(decideObservation(state, facts(status)), `${status} on ${state}`).toEqual({
          to: null,
          queueVend: false,
          refund: null,
          alarm: null,
        });
      }
    }
  });

  it('never queues a vend for any status other than paid, or authorized in manual mode, of the right amount', () => {
    for (const state of ORDER_STATES) {
      for (const status of CANONICAL_STATUSES) {
        for (const mode of ['automatic', 'manual'] as const) {
          for (const amountMatches of [true, false]) {
            const decision = decideObservation(state, facts(status, mode, { amountMatches }));
            if (decision.queueVend) {
              expect(status === 'paid' || (status === 'authorized' && mode === 'manual')).toBe(true);
              expect(state).toBe('awaiting_payment');
              expect(amountMatches).toBe(true);
            }
            if (decision.to) expect(canTransition(state, decision.to), `${state} → ${decision.to}`).toBe(true);
          }
        }
      }
    }
  });

  it('follows an invoice until the provider gives a final answer; canceled is final only after its expiry', () => {
    expect(isFinalReading('pending', 10, 5)).toBe(false);
    expect(isFinalReading('canceled', 4, 5)).toBe(false);
    expect(isFinalReading('canceled', 5, 5)).toBe(true);
    for (const status of ['paid', 'authorized', 'expired', 'refunded', 'partially_refunded'] as const)
      expect(isFinalReading(status, 0, 5)).toBe(true);
  });
});
