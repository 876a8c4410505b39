import { afterEach, describe, expect, it } from 'vitest';
import { askedByKeyThenOneReceipt, buildFiscalCore, durableCommitsFromNow, type FiscalHarness } from './harness.js';

/**
 * The sale receipt's first call claimed in the vend's settle commit, with the worker started as the
 * service starts it: a crash between that commit and the register call is the same as after a claim
 * of its own (asked by key first, one receipt), and a commit that is not durable (a person's
 * resolve) never carries the claim.
 */
describe('the sale receipt claimed with its vend', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  it('a crash after the settle commit and before the register call: sending on disk, asked by key after the restart, one receipt', async () => {
    h = buildFiscalCore();
    h.fiscal.start();
    await h.fiscal.worker.run();
    const durable = durableCommitsFromNow();
    h.crash.at = 'after_receipt_claim';
    const order = await h.sell();
    // The first pass after the settle calls the register for it; the crash comes just before the call.
    await h.fiscal.worker.run().catch(() => undefined);
    await h.fiscal.worker.run().catch(() => undefined);
    expect(h.crash.at, 'the crash point was reached').toBeNull();
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'sending', attempts: 1 }]);
    expect(durable).not.toContain('receipt_claim');
    expect(h.register.held()).toHaveLength(0);
    await h.fiscal.stop();
    await h.restart();
    await askedByKeyThenOneReceipt(h, order.id);
  });

  it('a person resolving an uncertain vend as vended (a plain commit) queues the receipt unclaimed', async () => {
    h = buildFiscalCore();
    h.fiscal.start();
    await h.fiscal.worker.run();
    h.machine.next = () => ({ result: 'unknown', detail: 'no answer' });
    const order = await h.sell();
    expect(order.state).toBe('vend_uncertain');
    h.node.money.vend.resolve(order.id, true, 'test');
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'queued', attempts: 0 }]);
    await h.pass();
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'issued', attempts: 1 }]);
  });
});
