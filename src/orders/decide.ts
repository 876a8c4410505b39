import type { CanonicalStatus } from '../payments/index.js';
import type { OrderState } from './state.js';

/**
 * Every rule of the money path, in one pure module: what a reading of the provider means for an
 * order (vend / refund / void / wait), which statuses mean money, which order states count as in
 * progress for which question, what a capture answer means, which kind of refund gives money back,
 * what a vend outcome settles into. No I/O, no clock: callers pass the facts, this module answers.
 * `orders/`, `ledger/`, `vend/`, `device/` and `cli/` ask here instead of writing a rule of their own.
 *
 * A new rule is a new row of the table it belongs to, placed where first-match order gives it
 * priority, with a name (tests refer to rows by name) and a sentence saying why. Then
 * test/orders/decide.test.ts: the exhaustive sweep fails until the new row's cases are listed.
 */

// ---------------------------------------------------------------------------------------------
// Order states: which question counts which state (one row per state, one column per question).
// ---------------------------------------------------------------------------------------------

/**
 * - `waitsForMoney`: the order still waits for the customer's money.
 * - `delivering`: money taken, goods on their way: a new order is refused (one order at a time).
 * - `serviceAtWork`: the service is still working on a payment it has seen: the reconciliation
 *   does not call it a finding while it runs.
 * - `holdsTheMachine`: an operator's test vend is refused (an order may fire any moment).
 * - `final`: nothing automatic leaves this state.
 */
export interface StateTraits {
  waitsForMoney: boolean;
  delivering: boolean;
  serviceAtWork: boolean;
  holdsTheMachine: boolean;
  final: boolean;
}

const Y = true;
const n = false;

// prettier-ignore
export const STATE_TRAITS: Readonly<Record<OrderState, StateTraits>> = {
  //                  waitsForMoney  delivering  serviceAtWork  holdsTheMachine  final
  creating:         { waitsForMoney: Y, delivering: n, serviceAtWork: n, holdsTheMachine: Y, final: n },
  awaiting_payment: { waitsForMoney: Y, delivering: n, serviceAtWork: n, holdsTheMachine: Y, final: n },
  paid:             { waitsForMoney: n, delivering: Y, serviceAtWork: Y, holdsTheMachine: Y, final: n },
  authorized:       { waitsForMoney: n, delivering: Y, serviceAtWork: Y, holdsTheMachine: Y, final: n },
  vending:          { waitsForMoney: n, delivering: Y, serviceAtWork: Y, holdsTheMachine: Y, final: n },
  vended:           { waitsForMoney: n, delivering: n, serviceAtWork: n, holdsTheMachine: n, final: Y },
  vend_failed:      { waitsForMoney: n, delivering: n, serviceAtWork: n, holdsTheMachine: n, final: n },
  vend_uncertain:   { waitsForMoney: n, delivering: n, serviceAtWork: n, holdsTheMachine: n, final: Y },
  refunding:        { waitsForMoney: n, delivering: n, serviceAtWork: Y, holdsTheMachine: n, final: n },
  refunded:         { waitsForMoney: n, delivering: n, serviceAtWork: n, holdsTheMachine: n, final: Y },
  canceled:         { waitsForMoney: n, delivering: n, serviceAtWork: n, holdsTheMachine: n, final: Y },
  expired:          { waitsForMoney: n, delivering: n, serviceAtWork: n, holdsTheMachine: n, final: Y },
  failed:           { waitsForMoney: n, delivering: n, serviceAtWork: n, holdsTheMachine: n, final: Y },
};

const statesWhere = (trait: keyof StateTraits): readonly OrderState[] =>
  (Object.keys(STATE_TRAITS) as OrderState[]).filter((state) => STATE_TRAITS[state][trait]);

/** States in which an order still waits for the customer's money. */
export const OPEN_STATES = statesWhere('waitsForMoney');
/** States in which money was taken and goods are on their way (a new order is refused meanwhile). */
export const IN_PROGRESS_STATES = statesWhere('delivering');
/** States in which the service still works on a payment it has seen (not a reconciliation finding). */
export const SERVICE_AT_WORK_STATES = statesWhere('serviceAtWork');
/** Not compared by the reconciliation at all: the live path (poller, expiry) still owns these. */
export const LIVE_STATES: readonly OrderState[] = [...OPEN_STATES, ...SERVICE_AT_WORK_STATES];
/** Orders in these states hold the machine: no test vend meanwhile. */
export const HOLDS_THE_MACHINE_STATES = statesWhere('holdsTheMachine');
/** States nothing automatic will leave. */
export const FINAL_STATES = statesWhere('final');

export function isOpen(state: OrderState): boolean {
  return STATE_TRAITS[state].waitsForMoney;
}

/** A queued vend job may be claimed only while its order holds money and no goods left (else the job is void). */
export function mayClaimVend(state: OrderState): boolean {
  return state === 'paid' || state === 'authorized';
}

/** An operator may give the money back for a paid order not yet vended, or a vended one (a complaint). */
export function operatorMayRefund(state: OrderState): boolean {
  return state === 'paid' || state === 'authorized' || state === 'vended';
}

// ---------------------------------------------------------------------------------------------
// Provider statuses: what a reading says about the money.
// ---------------------------------------------------------------------------------------------

/** Money is with the merchant (taken or held), at least in part. */
export function isMoneyStatus(status: CanonicalStatus): boolean {
  return status === 'paid' || status === 'authorized' || status === 'partially_refunded';
}
export const MONEY_STATUSES: readonly CanonicalStatus[] = ['paid', 'authorized', 'partially_refunded'];

/** The status is evidence about a refund (refunded / partially refunded / canceled on a void): the refund worker checks now. */
export function isRefundEvidence(status: CanonicalStatus): boolean {
  return status === 'refunded' || status === 'partially_refunded' || status === 'canceled';
}

/** The provider closed the invoice without payment (the answer to our cancel, or its own expiry). */
export function isClosedUnpaid(status: CanonicalStatus): boolean {
  return status === 'canceled' || status === 'expired';
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

// ---------------------------------------------------------------------------------------------
// Refund kind: give paid money back, or cancel a held authorization.
// ---------------------------------------------------------------------------------------------

export type RefundKind = 'refund' | 'void';

/** From a reading: money only held (`authorized`) is voided; money taken is refunded. */
export function refundKindOfReading(status: CanonicalStatus): RefundKind {
  return status === 'authorized' ? 'void' : 'refund';
}

/**
 * From the order, when no reading is at hand (a failed vend, an operator's refund, a resolve): in
 * manual capture the money is only held until the vend is settled as delivered, so it is voided;
 * a vended order's money was (or is being) captured and is refunded.
 */
export function refundKindOfOrder(order: { capture_mode: 'automatic' | 'manual'; state: OrderState }): RefundKind {
  return order.capture_mode === 'manual' && order.state !== 'vended' ? 'void' : 'refund';
}

/** Whether a reading shows that a refund of this kind has happened (the money is back). */
export function refundDoneByReading(kind: RefundKind, status: CanonicalStatus): boolean {
  return kind === 'void' ? isClosedUnpaid(status) : status === 'refunded';
}

/**
 * Before a refund of ours is sent, the invoice is read: what is still owed (null: nothing, the
 * money is back already — the merchant's dashboard, or a refund whose record a power cut lost).
 * In part refunded elsewhere → only the rest is sent.
 */
export function refundStillOwed(
  kind: RefundKind,
  reading: { status: CanonicalStatus; amount: number; refundedAmount?: number },
  queuedAmount: number,
): number | null {
  if (kind === 'void') return refundDoneByReading('void', reading.status) ? null : queuedAmount;
  const refundable = reading.amount - (reading.refundedAmount ?? 0);
  if (reading.status === 'refunded' || refundable <= 0) return null;
  return Math.min(queuedAmount, refundable);
}

/**
 * A vend interrupted by a restart, before it is parked for a person: the money already went back
 * at the provider (refunded, or, in manual capture, the authorization canceled or expired). Returns
 * why, or null.
 */
export function moneyBackBeforeInterruptedVend(
  captureMode: 'automatic' | 'manual',
  reading: { status: CanonicalStatus; providerStatus: string },
): string | null {
  if (reading.status === 'refunded') return 'the invoice is already refunded at the provider';
  if (captureMode === 'manual' && isClosedUnpaid(reading.status))
    return `the authorization is already ${reading.providerStatus} at the provider`;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Capture (manual capture mode, after a delivered vend).
// ---------------------------------------------------------------------------------------------

export type CaptureOutcome = { done: true } | { done: false; permanent: boolean; detail: string };

/** What the invoice's status after a capture call (or a read after a cut) means for the capture. */
export function captureOutcome(status: CanonicalStatus | string, providerStatus: string): CaptureOutcome {
  if (status === 'paid' || status === 'refunded' || status === 'partially_refunded') return { done: true };
  if (status === 'authorized') return { done: false, permanent: false, detail: `capture left the invoice ${providerStatus}` };
  return { done: false, permanent: true, detail: `the authorization is ${providerStatus}: it can no longer be captured` };
}

// ---------------------------------------------------------------------------------------------
// Vend outcome: what the actuator's answer settles the order into.
// ---------------------------------------------------------------------------------------------

/**
 * - `delivered`: the goods went (or nobody passed and the policy keeps the fare): `vended`.
 * - `failed`: nothing came out for sure: `vend_failed`, then `refunding`.
 * - `uncertain`: the machine may or may not have delivered: a person decides (`vend_uncertain`).
 */
export type VendSettlement = 'delivered' | 'failed' | 'uncertain';

export function settleVendOutcome(result: string, notPassedPolicy: 'refund' | 'keep'): VendSettlement {
  if (result === 'vended' || (result === 'not_passed' && notPassedPolicy === 'keep')) return 'delivered';
  if (result === 'failed' || result === 'not_passed') return 'failed';
  return 'uncertain';
}

// ---------------------------------------------------------------------------------------------
// Observations: what one reading of the provider means for an order in a given state.
// ---------------------------------------------------------------------------------------------

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
  refund: { kind: RefundKind; amount: number; reason: string } | null;
  /** Something a person should know about, with the order. */
  alarm: 'payment_mismatch' | 'refunded_elsewhere' | 'restored_closed_paid' | 'refunded_after_vend' | null;
}

/** One row of the observation table: the first row whose states, statuses and condition match decides. */
export interface ObservationRule {
  name: string;
  /** Why, in a sentence a reader can check against the code. */
  why: string;
  states: readonly OrderState[];
  statuses: readonly CanonicalStatus[];
  when?: (facts: ObservationFacts) => boolean;
  then: (facts: ObservationFacts, state: OrderState) => ObservationDecision;
}

const NOTHING: ObservationDecision = { to: null, queueVend: false, refund: null, alarm: null };

/** An order in `creating` has no invoice on file yet, so nothing can be observed for it. */
const WAITING: readonly OrderState[] = ['awaiting_payment'];
const CLOSED_UNPAID: readonly OrderState[] = ['canceled', 'expired', 'failed'];
/** Money taken, goods not yet on their way: a vend job may be queued but is not claimed. */
const BEFORE_VEND: readonly OrderState[] = ['paid', 'authorized'];
const HELD_OR_TAKEN: readonly CanonicalStatus[] = ['authorized', 'paid'];

const heldOrTakenState = (f: ObservationFacts): OrderState => (f.status === 'authorized' ? 'authorized' : 'paid');
const rest = (f: ObservationFacts) => f.paidAmount - f.refundedAmount;

/**
 * The one place that chooses vend / refund / void / wait, as rows read top to bottom: the first
 * row that matches decides; no row → nothing changes. Decides by the current status and the
 * invoice's refunds, never by event type or arrival order. A status that does not move the order
 * forward decides nothing.
 */
export const OBSERVATION_RULES: readonly ObservationRule[] = [
  {
    name: 'held-money-in-automatic-mode-waits',
    why: 'held money only counts in manual-capture mode; in automatic mode the order waits for `paid`',
    states: WAITING,
    statuses: ['authorized'],
    when: (f) => f.captureMode !== 'manual',
    then: () => NOTHING,
  },
  {
    name: 'restored-order-paid-goes-to-a-person',
    why: 'goods may have left after the backup was taken: queued, and the runner parks it for a person instead of firing',
    states: WAITING,
    statuses: HELD_OR_TAKEN,
    when: (f) => f.restoredOrder === true,
    then: (f) => ({ ...NOTHING, to: heldOrTakenState(f), queueVend: true }),
  },
  {
    name: 'payment-mismatch-goes-back',
    why: 'the amount or currency paid is not the order’s: never vended, the money goes back with an alarm',
    states: WAITING,
    statuses: HELD_OR_TAKEN,
    when: (f) => !f.amountMatches,
    then: (f) => ({
      to: 'refunding',
      queueVend: false,
      refund: { kind: refundKindOfReading(f.status), amount: f.paidAmount, reason: 'the payment does not match the order' },
      alarm: 'payment_mismatch',
    }),
  },
  {
    name: 'paid-too-late-goes-back',
    why: 'paid long after the QR expired: the customer has gone, so the money goes back',
    states: WAITING,
    statuses: HELD_OR_TAKEN,
    when: (f) => f.tooLateToServe,
    then: (f) => ({
      ...NOTHING,
      to: 'refunding',
      refund: {
        kind: refundKindOfReading(f.status),
        amount: f.paidAmount,
        reason: 'paid long after the QR expired: the customer has gone',
      },
    }),
  },
  {
    name: 'paid-vends',
    why: 'the customer paid (or, in manual capture, the money is held): the vend is queued',
    states: WAITING,
    statuses: HELD_OR_TAKEN,
    then: (f) => ({ ...NOTHING, to: heldOrTakenState(f), queueVend: true }),
  },
  {
    name: 'restored-closed-order-paid-goes-to-a-person',
    why: 'an order a restored database holds closed may have been vended after the backup (a power cut can take the close away and the payment be served before the restore): neither vended nor refunded by itself, a person decides',
    states: CLOSED_UNPAID,
    statuses: HELD_OR_TAKEN,
    when: (f) => f.restoredOrder === true,
    then: () => ({ ...NOTHING, to: 'vend_uncertain', alarm: 'restored_closed_paid' }),
  },
  {
    name: 'paid-after-close-goes-back',
    why: 'a late payment on a closed order is refunded (voided when only held), never lost',
    states: CLOSED_UNPAID,
    statuses: HELD_OR_TAKEN,
    then: (f, state) => ({
      ...NOTHING,
      to: 'refunding',
      refund: { kind: refundKindOfReading(f.status), amount: f.paidAmount, reason: `${f.status} after the order was ${state}` },
    }),
  },
  {
    name: 'closed-by-the-provider',
    why: 'the provider canceled or expired the invoice of a waiting order: the order closes the same way',
    states: WAITING,
    statuses: ['canceled', 'expired'],
    then: (f) => ({ ...NOTHING, to: f.status as 'canceled' | 'expired' }),
  },
  {
    name: 'restored-order-partly-refunded-goes-to-a-person',
    why: 'a restored order may have been delivered after the backup: a person decides (see restoredOrder)',
    states: WAITING,
    statuses: ['partially_refunded'],
    when: (f) => f.restoredOrder === true,
    then: () => ({ ...NOTHING, to: 'paid', queueVend: true }),
  },
  {
    name: 'partly-refunded-elsewhere-rest-goes-back',
    why: 'refunded in part elsewhere before any goods left: nothing is vended, the rest goes back',
    states: [...WAITING, ...CLOSED_UNPAID, ...BEFORE_VEND],
    statuses: ['partially_refunded'],
    when: (f) => rest(f) > 0,
    then: (f) => ({
      to: 'refunding',
      queueVend: false,
      refund: { kind: 'refund', amount: rest(f), reason: 'partly refunded elsewhere before the vend: the rest goes back' },
      alarm: 'refunded_elsewhere',
    }),
  },
  {
    name: 'refunded-elsewhere-never-vends',
    why: 'the money already went back (the merchant’s dashboard) before any goods left: never vend for it',
    states: [...WAITING, ...CLOSED_UNPAID, ...BEFORE_VEND],
    statuses: ['refunded'],
    then: () => ({ ...NOTHING, to: 'refunded', alarm: 'refunded_elsewhere' }),
  },
  {
    name: 'refunded-after-vend-goes-to-a-person',
    why: 'the provider confirms the money of a delivered sale went back (the merchant’s dashboard, a refund seen after the vend): the goods are gone and the money is with the customer, so the order records it as refunded, a receipted sale owes its return, and a person is told',
    states: ['vended'],
    statuses: ['refunded'],
    then: () => ({ ...NOTHING, to: 'refunded', alarm: 'refunded_after_vend' }),
  },
  {
    name: 'partly-refunded-after-vend-goes-to-a-person',
    why: 'part of a delivered sale’s money went back at the provider: the order stays vended (a return is for the whole sale) and a person is told',
    states: ['vended'],
    statuses: ['partially_refunded'],
    then: () => ({ ...NOTHING, alarm: 'refunded_after_vend' }),
  },
  // Everything else decides nothing: `pending`; a reading that does not move the order forward;
  // refund evidence for an order in `refunding` (the refund worker, which owns refunds, completes it).
];

/** The row that decides this reading for an order in `state`, or null (nothing changes). */
export function observationRuleFor(state: OrderState, facts: ObservationFacts): ObservationRule | null {
  for (const rule of OBSERVATION_RULES) {
    if (rule.states.includes(state) && rule.statuses.includes(facts.status) && (rule.when?.(facts) ?? true)) return rule;
  }
  return null;
}

/** What a reading means for an order in `state`: the first matching row of OBSERVATION_RULES decides. */
export function decideObservation(state: OrderState, facts: ObservationFacts): ObservationDecision {
  return observationRuleFor(state, facts)?.then(facts, state) ?? NOTHING;
}

// ---------------------------------------------------------------------------------------------
// Answers to a question of ours: a reading the service asked for with a purpose (our cancel, the
// recovery of an interrupted vend, the read around a refund of ours). These rows are read before
// OBSERVATION_RULES, and they decide even when the same status was recorded before (the question
// is new even if the status is not); when none matches, a new reading goes on to the table above.
// ---------------------------------------------------------------------------------------------

/** Why the service read (or changed) the invoice; passed with the observation to `observe()`. */
export type OurQuestion =
  /** We asked the provider to cancel a waiting order (customer, replacement, expiry); its answer decides. */
  | { kind: 'close'; as: 'canceled' | 'expired'; reason: string }
  /** Start-up found a vend cut by a restart: before it is parked for a person, did the money go back? */
  | { kind: 'interrupted_vend' }
  /**
   * The refund worker read the invoice around a refund of ours: before sending it, while checking
   * an unknown outcome, or (a void) the cancel's own answer.
   */
  | { kind: 'refund'; refundKind: RefundKind; queuedAmount: number; stage: 'before_send' | 'check' | 'cancel_answer' };

export interface AnswerFacts extends ObservationFacts {
  /** The provider's own word, for the history line. */
  providerStatus: string;
}

export interface AnswerRule {
  name: string;
  why: string;
  question: OurQuestion['kind'];
  states: readonly OrderState[];
  /** Returns the history line when the row decides, or null when it does not match. */
  decide: (facts: AnswerFacts, question: OurQuestion) => { to: OrderState; history: string } | null;
}

export const ANSWER_RULES: readonly AnswerRule[] = [
  {
    name: 'our-cancel-closes-the-order',
    why: 'the provider confirmed our cancel: the order closes as we asked (canceled, or expired when its time ran out)',
    question: 'close',
    states: WAITING,
    decide: (f, q) => (q.kind === 'close' && isClosedUnpaid(f.status) ? { to: q.as, history: q.reason } : null),
  },
  {
    name: 'interrupted-vend-money-already-back',
    why: 'a vend cut by a restart whose money the provider shows already back is settled as refunded, not parked for a person',
    question: 'interrupted_vend',
    states: ['vending'],
    decide: (f) => {
      const why = moneyBackBeforeInterruptedVend(f.captureMode, f);
      return why ? { to: 'refunded', history: `interrupted vend: ${why}` } : null;
    },
  },
  {
    name: 'our-refund-already-back-before-send',
    why: 'the read before a refund of ours shows the money back already (elsewhere, or a refund whose record a power cut lost): nothing is sent',
    question: 'refund',
    states: ['refunding'],
    decide: (f, q) =>
      q.kind === 'refund' &&
      q.stage === 'before_send' &&
      refundStillOwed(q.refundKind, { status: f.status, amount: f.paidAmount, refundedAmount: f.refundedAmount }, q.queuedAmount) === null
        ? {
            to: 'refunded',
            history: q.refundKind === 'void' ? 'authorization already canceled at the provider' : 'already refunded at the provider',
          }
        : null,
  },
  {
    name: 'our-refund-seen-done',
    why: 'a refund of ours with an unknown outcome is done when the invoice reads refunded (a void: canceled or expired)',
    question: 'refund',
    states: ['refunding'],
    decide: (f, q) =>
      q.kind === 'refund' && q.stage === 'check' && refundDoneByReading(q.refundKind, f.status)
        ? { to: 'refunded', history: `invoice is ${f.status}` }
        : null,
  },
  {
    name: 'our-void-answered-canceled',
    why: 'the cancel that voids a held authorization answered canceled or expired: the money is back',
    question: 'refund',
    states: ['refunding'],
    decide: (f, q) =>
      q.kind === 'refund' && q.stage === 'cancel_answer' && refundDoneByReading('void', f.status)
        ? { to: 'refunded', history: 'authorization canceled' }
        : null,
  },
];

/** The answer row that decides this reading of ours, with its move, or null (the observation table decides a new reading). */
export function answerRuleFor(
  state: OrderState,
  facts: AnswerFacts,
  question: OurQuestion,
): { rule: AnswerRule; to: OrderState; history: string } | null {
  for (const rule of ANSWER_RULES) {
    if (rule.question !== question.kind || !rule.states.includes(state)) continue;
    const decided = rule.decide(facts, question);
    if (decided) return { rule, ...decided };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// The create answer: what the invoice a create call returned is to the attempt that sent it.
// ---------------------------------------------------------------------------------------------

export interface CreateAnswerFacts {
  /**
   * Why the answer is not the invoice of this attempt's request (another reference, amount,
   * currency, livemode or description; created or expired before the order), or null when it is.
   */
  identityMismatch: string | null;
  status: CanonicalStatus;
}

export type CreateAnswerDecision =
  /** The invoice this attempt made, not paid yet: attach it and show its QR. */
  | { kind: 'attach'; rule: string }
  /** Ours, already paid or refunded: attached and followed like any other invoice, with an alarm. */
  | { kind: 'attach_seen_already'; rule: string }
  /** Another request's invoice: never vended, a new attempt with a new key. */
  | { kind: 'foreign'; rule: string; reason: string };

export interface CreateAnswerRule {
  name: string;
  why: string;
  when: (facts: CreateAnswerFacts) => boolean;
  then: (facts: CreateAnswerFacts) => CreateAnswerDecision['kind'];
}

/** First match decides, top to bottom. */
export const CREATE_ANSWER_RULES: readonly CreateAnswerRule[] = [
  {
    name: 'create-answer-of-another-request',
    why: 'an answer whose reference, money, description or times are not this request’s is a key used before under other terms: never vended, a new attempt',
    when: (f) => f.identityMismatch !== null,
    then: () => 'foreign',
  },
  {
    name: 'our-new-invoice',
    why: 'the invoice this attempt made, not paid yet: attached, and its QR shown once the answer is on disk',
    when: (f) => f.status === 'pending' || f.status === 'canceled' || f.status === 'expired',
    then: () => 'attach',
  },
  {
    name: 'our-own-key-is-ours',
    why: 'an answer under this attempt’s exact key and nonce’d reference that is already paid or refunded can only be ours, its record lost after the QR was shown (a power cut after the 201, a card turned read-only): attached and followed like any other — the observation table vends it inside the window, refunds it after, parks a restored order — with an alarm; never a new attempt, which abandons the money',
    when: () => true,
    then: () => 'attach_seen_already',
  },
];

export function decideCreateAnswer(facts: CreateAnswerFacts): CreateAnswerDecision {
  // The last row matches every answer, so a row is always found.
  const rule = CREATE_ANSWER_RULES.find((r) => r.when(facts)) ?? CREATE_ANSWER_RULES[CREATE_ANSWER_RULES.length - 1];
  if (!rule) throw new Error('the create-answer table is empty');
  const kind = rule.then(facts);
  return kind === 'foreign' ? { kind, rule: rule.name, reason: facts.identityMismatch ?? rule.why } : { kind, rule: rule.name };
}

// ---------------------------------------------------------------------------------------------
// Orphans: an invoice under this device's reference that no order of the database knows
// (ledger/orphans.ts). The sweep asks this table and writes no rule of its own.
// ---------------------------------------------------------------------------------------------

export interface OrphanFacts {
  status: CanonicalStatus;
  /** What is left of the money after its refunds (minor units), as the provider's own read says. */
  rest: number;
  /**
   * This database itself proves that no goods went out for the invoice (ledger/orphans.ts
   * `proofOfNoDelivery`): an order of this database under exactly the invoice's provider-side
   * reference, closed unpaid (failed, canceled or expired) with no vend job ever queued, on a
   * database never restored. Nothing else counts: an absence of records is not a proof.
   */
  provenNotDelivered: boolean;
  /**
   * The invoice expired before `storage.retentionDays` ago: retention may have deleted the order
   * that had it (its events can still arrive later), so the database cannot say it is an orphan.
   */
  olderThanRetention: boolean;
}

/**
 * `read_again`: still payable, the next pass reads it. `too_old`: left alone, with a warning (it
 * may be a pruned order's). `void`: held money is released.
 * `nothing_owed`: closed without money. `refund`: the rest goes back. `person`: a person decides
 * (critical alarm, `vendgate settle`), nothing is moved.
 */
export type OrphanAction = 'read_again' | 'too_old' | 'void' | 'nothing_owed' | 'refund' | 'person';

export interface OrphanRule {
  name: string;
  why: string;
  when: (facts: OrphanFacts) => boolean;
  then: OrphanAction;
}

/**
 * First match decides, top to bottom. The create answer is on disk before a QR is shown (invariant
 * 4), so money on an invoice no order knows means the database lost history: goods may have gone
 * out for it. Money leaves only on the database's own proof that they did not; otherwise a person
 * decides.
 */
export const ORPHAN_RULES: readonly OrphanRule[] = [
  {
    name: 'orphan-pending-is-read-again',
    why: 'still payable: nothing to settle yet, the next pass reads it again',
    when: (f) => f.status === 'pending',
    then: 'read_again',
  },
  {
    name: 'orphan-older-than-retention-is-left-alone',
    why: 'an invoice that expired before storage.retentionDays ago may be the invoice of an order retention deleted (a vended sale whose event came late): it is not known to be an orphan, so nothing is moved; a warning says so',
    when: (f) => f.olderThanRetention,
    then: 'too_old',
  },
  {
    name: 'orphan-held-proven-undelivered-is-voided',
    why: 'money held (manual capture) under the reference of an order this database holds closed unpaid, never queued for a vend: no goods went out for it, so the hold is released',
    when: (f) => f.status === 'authorized' && f.provenNotDelivered,
    then: 'void',
  },
  {
    name: 'orphan-held-goes-to-a-person',
    why: 'money held for an order this database does not know (a new, replaced or restored database): the goods may have gone out before the record was lost, and a void would give them away; a person decides',
    when: (f) => f.status === 'authorized',
    then: 'person',
  },
  {
    name: 'orphan-without-money-owes-nothing',
    why: 'closed unpaid, or already refunded in full: nothing is owed, the alarm says what was found',
    when: (f) => (f.status !== 'paid' && f.status !== 'partially_refunded') || f.rest <= 0,
    then: 'nothing_owed',
  },
  {
    name: 'orphan-paid-proven-undelivered-is-refunded',
    why: 'money taken under the reference of an order this database holds closed unpaid, never queued for a vend, on a database never restored: nothing was handed out for it, so the money goes back',
    when: (f) => f.provenNotDelivered,
    then: 'refund',
  },
  {
    name: 'orphan-paid-goes-to-a-person',
    why: 'money taken for an order this database does not know: the database lost history (a new or replaced card, a restore), and the goods may have gone out for it; refunding would give them away, keeping it could keep money for goods never handed out — a person decides (vendgate settle)',
    when: () => true,
    then: 'person',
  },
];

export function orphanRuleFor(facts: OrphanFacts): OrphanRule {
  // The last row matches every orphan, so a row is always found.
  const rule = ORPHAN_RULES.find((r) => r.when(facts)) ?? ORPHAN_RULES[ORPHAN_RULES.length - 1];
  if (!rule) throw new Error('the orphan table is empty');
  return rule;
}
