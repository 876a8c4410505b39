import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { observeDurableCommits, type DurableStep } from '../../src/store/index.js';
import { createFakeProvider } from '../fakes/provider.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Power cuts, not only crashes: every money step that precedes an irreversible outside action (or
 * that a person would otherwise settle after a cut) commits with synchronous=FULL. A later change
 * that commits one of them through a plain transaction fails here, because the step is then never
 * seen committing durably.
 */

const MONEY_STEPS: DurableStep[] = ['invoice_attach', 'vend_claim', 'vend_settle', 'refund_claim', 'capture_claim', 'receipt_claim'];

const defer = cleanup();

describe('power-loss durability of the money steps', () => {
  it('the create answer (with the order and its key), vend claim, vend settle, refund claim, capture claim and receipt claim each commit with synchronous=FULL', async () => {
    const seen = new Map<DurableStep, number[]>();
    observeDurableCommits((step, synchronous) => seen.set(step, [...(seen.get(step) ?? []), synchronous]));
    const dir = defer(tempDir(), (d) => d.cleanup());
    const settings = testSettings(dir.path, { provider: { captureMode: 'manual' }, fiscal: { register: 'sandbox' } });
    const fake = createFakeProvider({ livemode: false });
    const app = defer(createApp(settings, { provider: fake.provider }), stop);
    defer(null, () => observeDurableCommits(null));
    await app.start();
    const ctx = app.context();

    // A sale: order, authorization, vend, capture.
    const sold = await ctx.orders.create({ source: 'cli', slot: 'A1' });
    fake.set(sold.invoice_id!, 'authorized');
    ctx.poller.pollNow(sold.invoice_id!);
    await waitFor(() => ctx.orders.get(sold.id)!.state === 'vended', { timeoutMs: 30_000, what: 'the vend' });
    await waitFor(() => fake.calls.some((c) => c.method === 'captureInvoice'), { timeoutMs: 30_000, what: 'the capture' });
    // Its fiscal receipt: the first call's claim is written with the vend's settle (synchronous=FULL).
    await waitFor(() => ctx.db.prepare("SELECT state FROM receipts WHERE kind = 'sale'").get() !== undefined, {
      timeoutMs: 30_000,
      what: 'the sale receipt',
    });

    // An operator's refund of a vended order: the refund claim before the POST; the return's receipt
    // is claimed in a commit of its own before the register is called.
    ctx.vend.refund(sold.id, 'test');
    await waitFor(() => fake.calls.some((c) => c.method === 'refund'), { timeoutMs: 30_000, what: 'the refund' });
    await waitFor(() => seen.has('receipt_claim'), { timeoutMs: 30_000, what: 'the return receipt claim' });

    for (const step of MONEY_STEPS) {
      expect(seen.get(step), `${step} committed durably`).toBeDefined();
      expect(new Set(seen.get(step)), `${step} ran at synchronous=FULL`).toEqual(new Set([2]));
    }
    // And the connection is back to NORMAL for everything else.
    expect(ctx.db.pragma('synchronous', { simple: true })).toBe(1);
  });
});
