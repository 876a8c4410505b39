import { describe, expect, it } from 'vitest';
import { billIdSuffixOf } from '../../../src/fiscal/ebarimt/index.js';
import { externalCheckNumberOf } from '../../../src/fiscal/webkassa/index.js';
import type { FiscalRegister, ReceiptRequest } from '../../../src/fiscal/types.js';
import { saleRequest, simEbarimtRegister, simWebkassaRegister, startRegisters } from './register-harness.js';

/**
 * Every fault of the registers at once, seeded, with a worker that follows the port's rules: retry
 * after `unavailable`; after `unknown`, ask `lookup` and issue again only on `absent`. The promises
 * checked after every step: `unavailable` and `absent` mean the register holds nothing for the key;
 * `issued` and `found` name what it holds; a sale never becomes two receipts.
 */
const FAULTS = { serverError: 0.15, lostAfterCommit: 0.15, timeoutBeforeCommit: 0.05, timeoutAfterCommit: 0.05 };
const SALES = 15;
const MAX_STEPS = 60;
/**
 * A timeout fault holds the call until the adapter gives up, so each costs this long; the simulator
 * answers every other call in milliseconds. A call that is merely slow and times out is one more
 * `unknown`, which the worker here resolves by the port's rules as it does a drawn one.
 */
const TIMEOUT_MS = 500;

describe('registers under every fault at once', () => {
  it('Webkassa: each sale ends as exactly one check, and every outcome told the truth about what was held', async () => {
    const sim = await startRegisters({ seed: 26, webkassa: { faults: FAULTS } });
    const register = simWebkassaRegister(sim.url, { timeoutMs: TIMEOUT_MS });
    const heldFor = (request: ReceiptRequest) =>
      sim.registers.webkassa.records().cashboxes[0]!.checks.filter((c) => c.externalCheckNumber === externalCheckNumberOf(request.key));
    const outcomes = new Map<string, number>();
    const count = (kind: string) => outcomes.set(kind, (outcomes.get(kind) ?? 0) + 1);

    for (let i = 0; i < SALES; i += 1) {
      const request = saleRequest({ currency: 'KZT' });
      let registerId: string | null = null;
      let mustLookUp = false;
      for (let step = 0; registerId === null; step += 1) {
        expect(step, `sale ${i} did not settle`).toBeLessThan(MAX_STEPS);
        if (mustLookUp) {
          const found = await register.lookup(request);
          count(`lookup:${found.kind}`);
          if (found.kind === 'found') registerId = found.receipt.registerId;
          if (found.kind === 'absent') {
            expect(heldFor(request)).toHaveLength(0);
            mustLookUp = false;
          }
          continue;
        }
        const outcome = await register.issue(request);
        count(outcome.kind);
        expect(outcome.kind, outcome.kind === 'rejected' ? outcome.message : '').not.toBe('rejected');
        if (outcome.kind === 'issued') registerId = outcome.receipt.registerId;
        // A busy cashbox did nothing with this call, but an earlier attempt still in flight (a very slow
        // register) may yet land: retrying is safe (same key), "nothing held" is not promised then.
        if (outcome.kind === 'unavailable' && !/busy/.test(outcome.message)) expect(heldFor(request)).toHaveLength(0);
        if (outcome.kind === 'unknown') mustLookUp = true;
      }
      expect(heldFor(request).map((c) => c.checkNumber)).toEqual([registerId]);
    }
    expect(sim.registers.webkassa.records().cashboxes[0]!.checks).toHaveLength(SALES);
    // The faults did happen: the run is not a quiet one.
    expect(outcomes.get('unknown') ?? 0).toBeGreaterThan(0);
  });

  it('eBarimt: an issued sale is one receipt; unavailable means none; unknown (for a person) never more than one', async () => {
    const sim = await startRegisters({ seed: 26, ebarimt: { faults: FAULTS } });
    const register: FiscalRegister = simEbarimtRegister(sim.url, { timeoutMs: TIMEOUT_MS });
    const heldFor = (request: ReceiptRequest) =>
      sim.registers.ebarimt.records().receipts.filter((r) => r.billIdSuffix === billIdSuffixOf(request.key));
    let unknowns = 0;

    for (let i = 0; i < SALES; i += 1) {
      const request = saleRequest();
      for (let step = 0; ; step += 1) {
        expect(step, `sale ${i} did not settle`).toBeLessThan(MAX_STEPS);
        const outcome = await register.issue(request);
        expect(outcome.kind, outcome.kind === 'rejected' ? outcome.message : '').not.toBe('rejected');
        if (outcome.kind === 'unavailable') {
          expect(heldFor(request)).toHaveLength(0);
          continue;
        }
        if (outcome.kind === 'issued') expect(heldFor(request).map((r) => r.id)).toEqual([outcome.receipt.registerId]);
        if (outcome.kind === 'unknown') {
          unknowns += 1;
          expect((await register.lookup(request)).kind).toBe('cannot_tell');
          expect(heldFor(request).length).toBeLessThanOrEqual(1);
        }
        break;
      }
    }
    expect(unknowns).toBeGreaterThan(0);
  });
});
