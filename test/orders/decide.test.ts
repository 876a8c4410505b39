import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  canTransition,
  captureOutcome,
  decideObservation,
  FINAL_STATES,
  HOLDS_THE_MACHINE_STATES,
  IN_PROGRESS_STATES,
  isClosedUnpaid,
  isMoneyStatus,
  isOpen,
  isRefundEvidence,
  LIVE_STATES,
  mayClaimVend,
  operatorMayRefund,
  ANSWER_RULES,
  answerRuleFor,
  type AnswerFacts,
  type OurQuestion,
  moneyBackBeforeInterruptedVend,
  OBSERVATION_RULES,
  observationRuleFor,
  OPEN_STATES,
  ORDER_STATES,
  refundDoneByReading,
  refundKindOfOrder,
  refundKindOfReading,
  refundStillOwed,
  SERVICE_AT_WORK_STATES,
  settleVendOutcome,
  type ObservationDecision,
  type ObservationFacts,
  type OrderState,
} from '../../src/orders/index.js';
import { CANONICAL_STATUSES, type CanonicalStatus } from '../../src/payments/types.js';

/**
 * The rules as they were written before they became one table (src/orders/state.ts at cecb1e4),
 * kept here verbatim as the oracle: the table must decide every case exactly as they did.
 */
function decidedBefore(state: OrderState, facts: ObservationFacts): ObservationDecision {
  const NOTHING: ObservationDecision = { to: null, queueVend: false, refund: null, alarm: null };
  const waiting = state === 'awaiting_payment';
  const closedUnpaid = state === 'canceled' || state === 'expired' || state === 'failed';
  const beforeVend = state === 'paid' || state === 'authorized';
  const rest = facts.paidAmount - facts.refundedAmount;
  switch (facts.status) {
    case 'pending':
      return NOTHING;
    case 'authorized':
    case 'paid': {
      const held = facts.status === 'authorized';
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
      // The one change since cecb1e4 (found by the property test's power-cut move): a restored
      // order closed in the backup that turns out paid goes to a person, not back to the customer.
      if (closedUnpaid && facts.restoredOrder) return { ...NOTHING, to: 'vend_uncertain', alarm: 'restored_closed_paid' };
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
      if (waiting && facts.restoredOrder) return { ...NOTHING, to: 'paid', queueVend: true };
      // Since the refund-evidence rule: money of a delivered sale going back is told to a person.
      if (state === 'vended') return { ...NOTHING, alarm: 'refunded_after_vend' };
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
      if (waiting || closedUnpaid || beforeVend) return { ...NOTHING, to: 'refunded', alarm: 'refunded_elsewhere' };
      if (state === 'vended') return { ...NOTHING, to: 'refunded', alarm: 'refunded_after_vend' };
      return NOTHING;
  }
}

const PAID = 1500;

/** Every combination of the facts that the rules look at (amounts: nothing, part and all refunded). */
function* everyCase(): Generator<[OrderState, ObservationFacts]> {
  for (const state of ORDER_STATES)
    for (const status of CANONICAL_STATUSES)
      for (const captureMode of ['automatic', 'manual'] as const)
        for (const amountMatches of [true, false])
          for (const tooLateToServe of [false, true])
            for (const restoredOrder of [undefined, false, true])
              for (const refundedAmount of [0, 500, PAID])
                yield [state, { status, captureMode, amountMatches, paidAmount: PAID, refundedAmount, tooLateToServe, restoredOrder }];
}

const facts = (status: CanonicalStatus, extra: Partial<ObservationFacts> = {}): ObservationFacts => ({
  status,
  captureMode: 'automatic',
  amountMatches: true,
  paidAmount: PAID,
  refundedAmount: 0,
  tooLateToServe: false,
  ...extra,
});

/** One case per row that the row decides (first match), named: the table reads as these sentences. */
const ROW_EXAMPLES: Record<string, [OrderState, ObservationFacts, Partial<ObservationDecision>]> = {
  'held-money-in-automatic-mode-waits': ['awaiting_payment', facts('authorized'), { to: null, queueVend: false }],
  'restored-order-paid-goes-to-a-person': [
    'awaiting_payment',
    facts('paid', { restoredOrder: true, amountMatches: false }),
    { to: 'paid', queueVend: true },
  ],
  'payment-mismatch-goes-back': [
    'awaiting_payment',
    facts('paid', { amountMatches: false }),
    { to: 'refunding', alarm: 'payment_mismatch' },
  ],
  'paid-too-late-goes-back': [
    'awaiting_payment',
    facts('authorized', { captureMode: 'manual', tooLateToServe: true }),
    { to: 'refunding', alarm: null },
  ],
  'paid-vends': ['awaiting_payment', facts('authorized', { captureMode: 'manual' }), { to: 'authorized', queueVend: true }],
  'restored-closed-order-paid-goes-to-a-person': [
    'canceled',
    facts('paid', { restoredOrder: true }),
    { to: 'vend_uncertain', queueVend: false, alarm: 'restored_closed_paid' },
  ],
  'paid-after-close-goes-back': ['expired', facts('authorized'), { to: 'refunding', queueVend: false }],
  'closed-by-the-provider': ['awaiting_payment', facts('expired'), { to: 'expired' }],
  'restored-order-partly-refunded-goes-to-a-person': [
    'awaiting_payment',
    facts('partially_refunded', { restoredOrder: true, refundedAmount: 500 }),
    { to: 'paid', queueVend: true },
  ],
  'partly-refunded-elsewhere-rest-goes-back': [
    'authorized',
    facts('partially_refunded', { refundedAmount: 500 }),
    { to: 'refunding', alarm: 'refunded_elsewhere' },
  ],
  'refunded-elsewhere-never-vends': ['paid', facts('refunded', { refundedAmount: PAID }), { to: 'refunded', alarm: 'refunded_elsewhere' }],
  'refunded-after-vend-goes-to-a-person': [
    'vended',
    facts('refunded', { refundedAmount: PAID }),
    { to: 'refunded', alarm: 'refunded_after_vend' },
  ],
  'partly-refunded-after-vend-goes-to-a-person': [
    'vended',
    facts('partially_refunded', { refundedAmount: 500 }),
    { to: null, alarm: 'refunded_after_vend' },
  ],
};

describe('the observation table', () => {
  it('decides every state × every fact combination exactly as the rules did before they were one table', () => {
    let cases = 0;
    const differ: string[] = [];
    for (const [state, f] of everyCase()) {
      if (JSON.stringify(decideObservation(state, f)) !== JSON.stringify(decidedBefore(state, f)))
        differ.push(`${state} ${JSON.stringify(f)}`);
      cases++;
    }
    expect(differ).toEqual([]);
    expect(cases).toBe(ORDER_STATES.length * CANONICAL_STATUSES.length * 2 * 2 * 2 * 3 * 3);
  });

  it('agrees with the earlier rules on random amounts too', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ORDER_STATES),
        fc.record({
          status: fc.constantFrom(...CANONICAL_STATUSES),
          captureMode: fc.constantFrom('automatic' as const, 'manual' as const),
          amountMatches: fc.boolean(),
          paidAmount: fc.integer({ min: 0, max: 10_000_000 }),
          refundedAmount: fc.integer({ min: 0, max: 10_000_000 }),
          tooLateToServe: fc.boolean(),
          restoredOrder: fc.option(fc.boolean(), { nil: undefined }),
        }),
        (state, f) => {
          expect(decideObservation(state, f)).toEqual(decidedBefore(state, f));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it.each(Object.entries(ROW_EXAMPLES))('row %s decides its case', (name, [state, f, expected]) => {
    expect(observationRuleFor(state, f)?.name).toBe(name);
    expect(decideObservation(state, f)).toMatchObject(expected);
  });

  it('every row has a name, a reason, and decides at least one case (no row is shadowed by those above it)', () => {
    const names = OBSERVATION_RULES.map((rule) => rule.name);
    expect(new Set(names).size).toBe(names.length);
    expect(Object.keys(ROW_EXAMPLES).sort()).toEqual([...names].sort());
    const reached = new Set<string>();
    for (const [state, f] of everyCase()) {
      const rule = observationRuleFor(state, f);
      if (rule) reached.add(rule.name);
    }
    expect([...reached].sort()).toEqual([...names].sort());
    for (const rule of OBSERVATION_RULES) expect(rule.why.length).toBeGreaterThan(20);
  });

  it('no row moves an order where the state table forbids, vends without money, or refunds more than was paid', () => {
    for (const [state, f] of everyCase()) {
      const decision = decideObservation(state, f);
      if (decision.to) expect(canTransition(state, decision.to), `${state} → ${decision.to}`).toBe(true);
      if (decision.queueVend) {
        expect(decision.refund).toBeNull();
        expect(['paid', 'authorized']).toContain(decision.to);
        expect(isMoneyStatus(f.status)).toBe(true);
      }
      if (decision.refund) {
        expect(decision.to).toBe('refunding');
        expect(decision.refund.amount).toBeGreaterThan(0);
        expect(decision.refund.amount).toBeLessThanOrEqual(f.paidAmount);
      }
    }
  });

  it('nothing is decided for an order in creating (no invoice on file) or for a pending reading', () => {
    for (const [state, f] of everyCase()) {
      if (state === 'creating' || f.status === 'pending') expect(observationRuleFor(state, f)).toBeNull();
    }
  });
});

describe('which states count for which question', () => {
  it('keeps the three meanings of "in progress" apart, as they were', () => {
    expect(IN_PROGRESS_STATES).toEqual(['paid', 'authorized', 'vending']);
    expect(SERVICE_AT_WORK_STATES).toEqual(['paid', 'authorized', 'vending', 'refunding']);
    expect(HOLDS_THE_MACHINE_STATES).toEqual(['creating', 'awaiting_payment', 'paid', 'authorized', 'vending']);
    expect(LIVE_STATES).toEqual(['creating', 'awaiting_payment', 'paid', 'authorized', 'vending', 'refunding']);
  });

  it('a vend is claimed only for a paid (or held) order; an operator refunds paid, held or vended orders, and the state table agrees', () => {
    expect(ORDER_STATES.filter(mayClaimVend)).toEqual(['paid', 'authorized']);
    expect(ORDER_STATES.filter(operatorMayRefund)).toEqual(['paid', 'authorized', 'vended']);
    for (const state of ORDER_STATES) {
      if (mayClaimVend(state)) expect(canTransition(state, 'vending')).toBe(true);
      if (operatorMayRefund(state)) expect(canTransition(state, 'refunding')).toBe(true);
    }
  });

  it('open and final states are as the state machine has them', () => {
    expect(OPEN_STATES).toEqual(['creating', 'awaiting_payment']);
    expect([...FINAL_STATES].sort()).toEqual(['canceled', 'expired', 'failed', 'refunded', 'vend_uncertain', 'vended']);
    for (const state of ORDER_STATES) expect(isOpen(state)).toBe(OPEN_STATES.includes(state));
    // Nothing automatic leaves a final state: only refunding (an operator or a late payment) and
    // refunded follow, and from a closed order vend_uncertain (a restored database: a person decides).
    for (const state of FINAL_STATES)
      for (const to of ORDER_STATES)
        if (canTransition(state, to)) expect(['refunding', 'refunded', 'vended', 'vend_uncertain']).toContain(to);
  });
});

describe('the money rules beside the table', () => {
  it('money status, refund evidence and closed-unpaid for every provider status', () => {
    const money = CANONICAL_STATUSES.filter(isMoneyStatus);
    expect(money).toEqual(['authorized', 'paid', 'partially_refunded']);
    expect(CANONICAL_STATUSES.filter(isRefundEvidence)).toEqual(['canceled', 'partially_refunded', 'refunded']);
    expect(CANONICAL_STATUSES.filter(isClosedUnpaid)).toEqual(['canceled', 'expired']);
  });

  it('refund kind: held money is voided, taken money refunded; by the order: manual capture voids until vended', () => {
    for (const status of CANONICAL_STATUSES) expect(refundKindOfReading(status)).toBe(status === 'authorized' ? 'void' : 'refund');
    for (const state of ORDER_STATES) {
      expect(refundKindOfOrder({ capture_mode: 'automatic', state })).toBe('refund');
      expect(refundKindOfOrder({ capture_mode: 'manual', state })).toBe(state === 'vended' ? 'refund' : 'void');
    }
  });

  it('a refund is done by a reading of refunded; a void by canceled or expired', () => {
    for (const status of CANONICAL_STATUSES) {
      expect(refundDoneByReading('refund', status)).toBe(status === 'refunded');
      expect(refundDoneByReading('void', status)).toBe(status === 'canceled' || status === 'expired');
    }
  });

  it('what is still owed before a refund is sent: nothing when back already, only the rest when in part', () => {
    expect(refundStillOwed('refund', { status: 'paid', amount: 1500 }, 1500)).toBe(1500);
    expect(refundStillOwed('refund', { status: 'partially_refunded', amount: 1500, refundedAmount: 500 }, 1500)).toBe(1000);
    expect(refundStillOwed('refund', { status: 'partially_refunded', amount: 1500, refundedAmount: 500 }, 800)).toBe(800);
    expect(refundStillOwed('refund', { status: 'partially_refunded', amount: 1500, refundedAmount: 1500 }, 1500)).toBeNull();
    expect(refundStillOwed('refund', { status: 'refunded', amount: 1500, refundedAmount: 0 }, 1500)).toBeNull();
    expect(refundStillOwed('void', { status: 'authorized', amount: 1500 }, 1500)).toBe(1500);
    expect(refundStillOwed('void', { status: 'expired', amount: 1500 }, 1500)).toBeNull();
    expect(refundStillOwed('void', { status: 'canceled', amount: 1500 }, 1500)).toBeNull();
    fc.assert(
      fc.property(
        fc.constantFrom(...CANONICAL_STATUSES),
        fc.integer({ min: 1, max: 1e7 }),
        fc.integer({ min: 0, max: 1e7 }),
        fc.integer({ min: 1, max: 1e7 }),
        (status, amount, refundedAmount, queued) => {
          const owed = refundStillOwed('refund', { status, amount, refundedAmount }, queued);
          if (owed !== null) {
            expect(owed).toBeGreaterThan(0);
            expect(owed).toBeLessThanOrEqual(queued);
            expect(owed).toBeLessThanOrEqual(amount - refundedAmount);
          }
        },
      ),
    );
  });

  it('an interrupted vend is settled by the provider only when the money is back already', () => {
    for (const status of CANONICAL_STATUSES) {
      const reading = { status, providerStatus: `word-${status}` };
      expect(moneyBackBeforeInterruptedVend('automatic', reading) !== null).toBe(status === 'refunded');
      expect(moneyBackBeforeInterruptedVend('manual', reading) !== null).toBe(['refunded', 'canceled', 'expired'].includes(status));
    }
    expect(moneyBackBeforeInterruptedVend('manual', { status: 'expired', providerStatus: 'EXPIRED' })).toBe(
      'the authorization is already EXPIRED at the provider',
    );
  });

  it('capture outcome for every status: taken is done, still held retries, anything else never will', () => {
    for (const status of CANONICAL_STATUSES) {
      const outcome = captureOutcome(status, 'word');
      if (['paid', 'refunded', 'partially_refunded'].includes(status)) expect(outcome).toEqual({ done: true });
      else if (status === 'authorized') expect(outcome).toMatchObject({ done: false, permanent: false });
      else expect(outcome).toMatchObject({ done: false, permanent: true });
    }
  });

  it('vend outcome: delivered, failed (money back) or uncertain (a person decides)', () => {
    expect(settleVendOutcome('vended', 'refund')).toBe('delivered');
    expect(settleVendOutcome('vended', 'keep')).toBe('delivered');
    expect(settleVendOutcome('not_passed', 'keep')).toBe('delivered');
    expect(settleVendOutcome('not_passed', 'refund')).toBe('failed');
    expect(settleVendOutcome('failed', 'keep')).toBe('failed');
    expect(settleVendOutcome('failed', 'refund')).toBe('failed');
    expect(settleVendOutcome('unknown', 'refund')).toBe('uncertain');
    expect(settleVendOutcome('unknown', 'keep')).toBe('uncertain');
  });
});

describe('answers to a question of ours', () => {
  const QUESTIONS: OurQuestion[] = [
    { kind: 'close', as: 'canceled', reason: 'canceled by customer' },
    { kind: 'close', as: 'expired', reason: 'not paid in time' },
    { kind: 'interrupted_vend' },
    ...(['refund', 'void'] as const).flatMap((refundKind) =>
      (['before_send', 'check', 'cancel_answer'] as const).map((stage) => ({
        kind: 'refund' as const,
        refundKind,
        queuedAmount: PAID,
        stage,
      })),
    ),
  ];
  const answerFacts = (f: ObservationFacts): AnswerFacts => ({ ...f, providerStatus: `word-${f.status}` });

  /** Written out independently of the rows: the move each question's answer makes, or null. */
  function expectedAnswer(state: OrderState, f: ObservationFacts, q: OurQuestion): OrderState | null {
    const closedUnpaid = f.status === 'canceled' || f.status === 'expired';
    switch (q.kind) {
      case 'close':
        return state === 'awaiting_payment' && closedUnpaid ? q.as : null;
      case 'interrupted_vend':
        return state === 'vending' && (f.status === 'refunded' || (f.captureMode === 'manual' && closedUnpaid)) ? 'refunded' : null;
      case 'refund': {
        if (state !== 'refunding') return null;
        const voidDone = closedUnpaid;
        if (q.stage === 'cancel_answer') return voidDone ? 'refunded' : null;
        if (q.refundKind === 'void') return voidDone ? 'refunded' : null;
        if (q.stage === 'check') return f.status === 'refunded' ? 'refunded' : null;
        return f.status === 'refunded' || f.paidAmount - f.refundedAmount <= 0 ? 'refunded' : null;
      }
    }
  }

  it('every question × state × fact combination: the answer rows move exactly as written out, and only forward', () => {
    const wrong: string[] = [];
    for (const q of QUESTIONS)
      for (const [state, f] of everyCase()) {
        const answer = answerRuleFor(state, answerFacts(f), q);
        const ok =
          (answer?.to ?? null) === expectedAnswer(state, f, q) &&
          (!answer || (canTransition(state, answer.to) && answer.rule.question === q.kind && answer.history.length > 0));
        if (!ok) wrong.push(`${JSON.stringify(q)} ${state} ${JSON.stringify(f)} → ${answer?.rule.name ?? 'no row'}`);
      }
    expect(wrong).toEqual([]);
  });

  it('each answer row is named, reached, and writes the history line the order shows', () => {
    const reached = new Map<string, Set<string>>();
    for (const q of QUESTIONS)
      for (const [state, f] of everyCase()) {
        const answer = answerRuleFor(state, answerFacts(f), q);
        if (answer) reached.set(answer.rule.name, (reached.get(answer.rule.name) ?? new Set()).add(answer.history));
      }
    expect([...reached.keys()].sort()).toEqual(ANSWER_RULES.map((rule) => rule.name).sort());
    expect(reached.get('our-cancel-closes-the-order')).toEqual(new Set(['canceled by customer', 'not paid in time']));
    expect(reached.get('interrupted-vend-money-already-back')).toEqual(
      new Set([
        'interrupted vend: the invoice is already refunded at the provider',
        'interrupted vend: the authorization is already word-canceled at the provider',
        'interrupted vend: the authorization is already word-expired at the provider',
      ]),
    );
    expect(reached.get('our-refund-already-back-before-send')).toEqual(
      new Set(['already refunded at the provider', 'authorization already canceled at the provider']),
    );
    expect(reached.get('our-void-answered-canceled')).toEqual(new Set(['authorization canceled']));
  });
});
