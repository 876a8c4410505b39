import { describe, expect, it } from 'vitest';
import { CREATE_ANSWER_RULES, decideCreateAnswer } from '../../src/orders/index.js';
import type { CanonicalStatus } from '../../src/payments/types.js';

/** The create-answer table of src/orders/decide.ts, swept over every status, with and without a mismatch. */

const STATUSES: CanonicalStatus[] = ['pending', 'authorized', 'paid', 'partially_refunded', 'refunded', 'canceled', 'expired'];

describe('create answer table', () => {
  it('has one named row per answer, each with a reason', () => {
    expect(CREATE_ANSWER_RULES.map((r) => r.name)).toEqual(['create-answer-of-another-request', 'our-new-invoice', 'our-own-key-is-ours']);
    for (const rule of CREATE_ANSWER_RULES) expect(rule.why.length).toBeGreaterThan(20);
  });

  it.each(STATUSES)('an answer of another request (%s) is foreign, whatever its status: a new attempt, never vended', (status) => {
    expect(decideCreateAnswer({ identityMismatch: 'amount 1501 ≠ 1500', status })).toEqual({
      kind: 'foreign',
      rule: 'create-answer-of-another-request',
      reason: 'amount 1501 ≠ 1500',
    });
  });

  it.each<CanonicalStatus>(['pending', 'canceled', 'expired'])('our invoice, %s: attached as new', (status) => {
    expect(decideCreateAnswer({ identityMismatch: null, status })).toEqual({ kind: 'attach', rule: 'our-new-invoice' });
  });

  it.each<CanonicalStatus>(['authorized', 'paid', 'partially_refunded', 'refunded'])(
    'our own key, already %s: ours, attached and followed (the observation table decides), never a new attempt',
    (status) => {
      expect(decideCreateAnswer({ identityMismatch: null, status })).toEqual({ kind: 'attach_seen_already', rule: 'our-own-key-is-ours' });
    },
  );
});
