import { describe, expect, it } from 'vitest';
import { ORPHAN_RULES, orphanRuleFor, type OrphanFacts } from '../../src/orders/index.js';
import type { CanonicalStatus } from '../../src/payments/types.js';

/** The orphan table of src/orders/decide.ts (applied by src/ledger/orphans.ts), swept over every status. */

const STATUSES: CanonicalStatus[] = ['pending', 'authorized', 'paid', 'partially_refunded', 'refunded', 'canceled', 'expired'];

const EXAMPLES: Record<string, OrphanFacts> = {
  'orphan-pending-is-read-again': { status: 'pending', rest: 1500, provenNotDelivered: false, olderThanRetention: false },
  'orphan-older-than-retention-is-left-alone': { status: 'paid', rest: 1500, provenNotDelivered: false, olderThanRetention: true },
  'orphan-held-proven-undelivered-is-voided': { status: 'authorized', rest: 1500, provenNotDelivered: true, olderThanRetention: false },
  'orphan-held-goes-to-a-person': { status: 'authorized', rest: 1500, provenNotDelivered: false, olderThanRetention: false },
  'orphan-without-money-owes-nothing': { status: 'partially_refunded', rest: 0, provenNotDelivered: false, olderThanRetention: false },
  'orphan-paid-proven-undelivered-is-refunded': { status: 'paid', rest: 1500, provenNotDelivered: true, olderThanRetention: false },
  'orphan-paid-goes-to-a-person': { status: 'paid', rest: 1500, provenNotDelivered: false, olderThanRetention: false },
};

describe('orphan table', () => {
  it('every row has a reason and decides its example', () => {
    expect(Object.keys(EXAMPLES)).toEqual(ORPHAN_RULES.map((r) => r.name));
    for (const rule of ORPHAN_RULES) {
      expect(rule.why.length).toBeGreaterThan(20);
      expect(orphanRuleFor(EXAMPLES[rule.name]!).name).toBe(rule.name);
    }
  });

  it.each(STATUSES)(
    "%s: money held or taken moves only on the database's own proof that no goods went out; otherwise a person",
    (status) => {
      for (const provenNotDelivered of [false, true]) {
        expect(orphanRuleFor({ status, rest: 700, provenNotDelivered, olderThanRetention: true }).then).toBe(
          status === 'pending' ? 'read_again' : 'too_old',
        );
        const action = orphanRuleFor({ status, rest: 700, provenNotDelivered, olderThanRetention: false }).then;
        if (status === 'pending') expect(action).toBe('read_again');
        else if (status === 'authorized') expect(action).toBe(provenNotDelivered ? 'void' : 'person');
        else if (status === 'paid' || status === 'partially_refunded') expect(action).toBe(provenNotDelivered ? 'refund' : 'person');
        else expect(action).toBe('nothing_owed');
      }
    },
  );
});
