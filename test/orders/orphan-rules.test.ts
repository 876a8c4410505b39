import { describe, expect, it } from 'vitest';
import { ORPHAN_RULES, orphanRuleFor, type OrphanFacts } from '../../src/orders/index.js';
import type { CanonicalStatus } from '../../src/payments/types.js';

/** The orphan table of src/orders/decide.ts (applied by src/ledger/orphans.ts), swept over every status. */

const STATUSES: CanonicalStatus[] = ['pending', 'authorized', 'paid', 'partially_refunded', 'refunded', 'canceled', 'expired'];

const EXAMPLES: Record<string, OrphanFacts> = {
  'orphan-pending-is-read-again': { status: 'pending', rest: 1500, restoredDatabase: true, olderThanRetention: false },
  'orphan-older-than-retention-is-left-alone': { status: 'paid', rest: 1500, restoredDatabase: false, olderThanRetention: true },
  'orphan-held-is-voided': { status: 'authorized', rest: 1500, restoredDatabase: false, olderThanRetention: false },
  'orphan-without-money-owes-nothing': { status: 'partially_refunded', rest: 0, restoredDatabase: true, olderThanRetention: false },
  'restored-orphan-paid-goes-to-a-person': { status: 'paid', rest: 1500, restoredDatabase: true, olderThanRetention: false },
  'orphan-paid-is-refunded': { status: 'paid', rest: 1500, restoredDatabase: false, olderThanRetention: false },
};

describe('orphan table', () => {
  it('every row has a reason and decides its example', () => {
    expect(Object.keys(EXAMPLES)).toEqual(ORPHAN_RULES.map((r) => r.name));
    for (const rule of ORPHAN_RULES) {
      expect(rule.why.length).toBeGreaterThan(20);
      expect(orphanRuleFor(EXAMPLES[rule.name]!).name).toBe(rule.name);
    }
  });

  it.each(STATUSES)('%s: money still taken is refunded only on a database never restored; restored → a person', (status) => {
    for (const restoredDatabase of [false, true]) {
      expect(orphanRuleFor({ status, rest: 700, restoredDatabase, olderThanRetention: true }).then).toBe(
        status === 'pending' ? 'read_again' : 'too_old',
      );
      const action = orphanRuleFor({ status, rest: 700, restoredDatabase, olderThanRetention: false }).then;
      if (status === 'pending') expect(action).toBe('read_again');
      else if (status === 'authorized') expect(action).toBe('void');
      else if (status === 'paid' || status === 'partially_refunded') expect(action).toBe(restoredDatabase ? 'person' : 'refund');
      else expect(action).toBe('nothing_owed');
    }
  });
});
