import { afterEach, describe, expect, it } from 'vitest';
import { buildFiscalCore, durableCommitsFromNow, type FiscalHarness } from './harness.js';

/**
 * A register that is down must not wear the SD card: while its status does not answer, the worker
 * asks the status (which writes nothing) and claims no receipt, whatever the backlog. Counted with
 * the store's commit hook and the receipts rows themselves, on a manual clock, one pass a second.
 */
describe('a fiscal register that is down', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  it('costs at most one durable write per backoff step, and none while its status says it is down; the backlog goes once it answers', async () => {
    h = buildFiscalCore();
    h.register.faults.outageUntil(h.clock.now() + 3_600_000);
    const orders = [];
    for (let i = 0; i < 5; i += 1) orders.push(await h.sell());
    const durable = durableCommitsFromNow();
    const status = h.register.status.bind(h.register);
    let asked = 0;
    h.register.status = async () => {
      asked += 1;
      return status();
    };

    // The first pass finds the register down: one claim (and its call refused), then the pass stops.
    await h.pass();
    expect(durable.filter((s) => s === 'receipt_claim')).toHaveLength(1);
    const rowsAfterFirstFailure = JSON.stringify(h.receipts());

    // Ten minutes of passes, one a second, five receipts waiting: no claim and no write to them.
    for (let second = 0; second < 600; second += 1) {
      h.clock.advance(1_000);
      await h.pass();
    }
    expect(
      durable.filter((s) => s === 'receipt_claim'),
      'durable claims while down',
    ).toHaveLength(1);
    expect(JSON.stringify(h.receipts()), 'receipts rows unchanged while down').toBe(rowsAfterFirstFailure);
    // The status is asked on the backoff, at least every 5 s, and by the monitor once a minute: not
    // at each of the 600 passes.
    expect(asked).toBeGreaterThan(0);
    expect(asked).toBeLessThanOrEqual(600 / 5 + 10 + 5);

    // It comes back: within a few seconds every receipt is issued, once each.
    h.register.faults.outageUntil(null);
    let seconds = 0;
    while (seconds < 60 && h.receipts().some((r) => r.state !== 'issued')) {
      h.clock.advance(1_000);
      seconds += 1;
      await h.pass();
    }
    expect(seconds).toBeLessThanOrEqual(6);
    expect(h.receipts().map((r) => r.state)).toEqual(orders.map(() => 'issued'));
    expect(h.register.held()).toHaveLength(orders.length);
    expect(durable.filter((s) => s === 'receipt_claim')).toHaveLength(1 + orders.length);
  });
});
