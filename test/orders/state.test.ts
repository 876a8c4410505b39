import { describe, expect, it } from 'vitest';
import { canTransition, decideObservation, ORDER_STATES, allowedTransitions, type OrderState } from '../../src/orders/index.js';
import { CANONICAL_STATUSES } from '../../src/payments/types.js';

/** The intended flow, written out independently of the table in src/. */
const ALLOWED: [OrderState, OrderState][] = [
  ['creating', 'awaiting_payment'], ['creating', 'failed'], ['creating', 'canceled'], ['creating', 'expired'],
  ['awaiting_payment', 'paid'], ['awaiting_payment', 'authorized'], ['awaiting_payment', 'canceled'], ['awaiting_payment', 'expired'],
  ['paid', 'vending'], ['paid', 'refunding'], ['authorized', 'vending'], ['authorized', 'refunding'],
  ['vending', 'vended'], ['vending', 'vend_failed'], ['vending', 'vend_uncertain'],
  ['vend_failed', 'refunding'], ['vend_uncertain', 'vended'], ['vend_uncertain', 'refunding'], ['vended', 'refunding'],
  ['refunding', 'refunded'], ['canceled', 'refunding'], ['expired', 'refunding'], ['failed', 'refunding'],
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

describe('deciding on an observed status', () => {
  it('queues a vend when an awaiting order is paid', () => {
    expect(decideObservation('awaiting_payment', 'paid', 'automatic')).toEqual({ to: 'paid', queueVend: true, refund: null });
  });

  it('vends on an authorization only in manual-capture mode', () => {
    expect(decideObservation('awaiting_payment', 'authorized', 'manual')).toMatchObject({ to: 'authorized', queueVend: true });
    expect(decideObservation('awaiting_payment', 'authorized', 'automatic')).toMatchObject({ to: null, queueVend: false });
  });

  it('refunds a payment that arrives after the order was closed, never vends it', () => {
    for (const closed of ['canceled', 'expired', 'failed'] as const) {
      expect(decideObservation(closed, 'paid', 'automatic')).toEqual({ to: 'refunding', queueVend: false, refund: 'refund' });
      expect(decideObservation(closed, 'authorized', 'manual')).toEqual({ to: 'refunding', queueVend: false, refund: 'void' });
    }
  });

  it('ignores a late pending, canceled or expired on an order that was already paid', () => {
    for (const state of ['paid', 'vending', 'vended', 'refunding', 'refunded', 'vend_uncertain'] as const) {
      for (const status of ['pending', 'canceled', 'expired'] as const) {
        expect(decideObservation(state, status, 'automatic'), `${status} on ${state}`).toEqual({ to: null, queueVend: false, refund: null });
      }
    }
  });

  it('never queues a vend for any status other than paid, or authorized in manual mode', () => {
    for (const state of ORDER_STATES) {
      for (const status of CANONICAL_STATUSES) {
        for (const mode of ['automatic', 'manual'] as const) {
          const decision = decideObservation(state, status, mode);
          if (decision.queueVend) {
            expect(status === 'paid' || (status === 'authorized' && mode === 'manual')).toBe(true);
            expect(state).toBe('awaiting_payment');
          }
          if (decision.to) expect(canTransition(state, decision.to), `${state} → ${decision.to}`).toBe(true);
        }
      }
    }
  });
});
