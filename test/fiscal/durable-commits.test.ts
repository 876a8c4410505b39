import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { createApp } from '../../src/app.js';
import { observeDurableCommits, type DurableStep } from '../../src/store/index.js';
import { createFakeProvider } from '../fakes/provider.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { waitFor } from '../helpers/wait.js';

/**
 * On an SD card every synchronous=FULL commit is an fsync. A sale with a fiscal register costs the
 * same durable commits as one without: the create answer, the vend claim and the vend's settle,
 * whose commit also claims the sale receipt's first register call. Counted through the store's
 * commit hook (every durable commit, by name), not by time.
 */

const defer = cleanup();

describe('durable commits per sale with a fiscal register', () => {
  it('a paid, vended and receipted sale makes three durable commits, none of them a receipt claim of its own; one receipt each', async () => {
    const steps: DurableStep[] = [];
    const dir = defer(tempDir(), (d) => d.cleanup());
    const settings = testSettings(dir.path, { fiscal: { register: 'sandbox' } });
    const fake = createFakeProvider({ livemode: false });
    const app = defer(createApp(settings, { provider: fake.provider }), stop);
    defer(null, () => observeDurableCommits(null));
    await app.start();
    const ctx = app.context();
    const receiptOf = (orderId: number) =>
      ctx.db.prepare("SELECT state, attempts FROM receipts WHERE order_id = ? AND kind = 'sale'").get(orderId) as
        { state: string; attempts: number } | undefined;

    const sales = 5;
    const perSale: DurableStep[][] = [];
    for (let i = 0; i < sales; i += 1) {
      steps.length = 0;
      observeDurableCommits((step) => steps.push(step));
      const order = await ctx.orders.create({ source: 'cli', slot: 'A1' });
      fake.set(order.invoice_id!, 'paid');
      ctx.poller.pollNow(order.invoice_id!);
      await waitFor(() => receiptOf(order.id)?.state === 'issued', { timeoutMs: 30_000, what: `sale ${i + 1}'s receipt issued` });
      observeDurableCommits(null);
      perSale.push([...steps]);
      expect(receiptOf(order.id)?.attempts, 'one register call').toBe(1);
    }
    for (const commits of perSale) expect(commits.sort()).toEqual(['invoice_attach', 'vend_claim', 'vend_settle']);
    const register = new Database(join(dir.path, 'fiscal-sandbox.db'), { readonly: true });
    try {
      expect(register.prepare("SELECT count(*) AS n FROM sandbox_receipts WHERE kind = 'sale'").get()).toEqual({ n: sales });
    } finally {
      register.close();
    }
  });
});
