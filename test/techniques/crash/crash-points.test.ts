import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import { startService, type Service } from '../../helpers/service.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * The real service is killed with SIGKILL at each step of the payment path (a named crash point
 * makes the process kill itself), then restarted. Whatever the point, afterwards: at most one
 * actuation per order, no paid order without vended / refunded / vend_uncertain, one invoice per order.
 */
type Point =
  'after_order_insert' | 'after_invoice_create' | 'after_ledger_commit' | 'after_claim_commit' | 'after_actuation' | 'after_settle';

const EXPECTED: Record<Point, { state: string; actuations: number }> = {
  after_order_insert: { state: 'vended', actuations: 1 },
  after_invoice_create: { state: 'vended', actuations: 1 },
  after_ledger_commit: { state: 'vended', actuations: 1 },
  // Claimed, then died before touching the machine: nobody knows that, so a person decides.
  after_claim_commit: { state: 'vend_uncertain', actuations: 0 },
  // Delivered, then died before recording it: still uncertain — and never fired a second time.
  after_actuation: { state: 'vend_uncertain', actuations: 1 },
  after_settle: { state: 'vended', actuations: 1 },
};

describe('crash at every step of the payment path', () => {
  let svc: Service | null = null;
  afterEach(async () => {
    await svc?.stop();
    svc = null;
  });

  async function post(url: string, body?: unknown) {
    return fetch(url, {
      method: 'POST',
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
  }

  it.each(Object.keys(EXPECTED) as Point[])('SIGKILL %s: one actuation at most, the payment settled, one invoice', async (point) => {
    svc = await startService({ config: { poll: { intervalMs: 100 } }, env: { VENDGATE_CRASH_AT: point } });
    const url = svc.localUrl;
    const created = (await post(`${url}/api/orders`, { slot: 'A1' })
      .then((r) => r.json())
      .catch(() => null)) as { invoiceId?: string } | null;
    if (created?.invoiceId) {
      // The customer pays; the service then dies at the named point on its way to the vend.
      await post(`${url}/sandbox/pay/${created.invoiceId}`).catch(() => null);
    }
    const died = await svc.exited();
    expect(died.signal, `the service should have died at ${point}`).toBe('SIGKILL');

    await svc.restart({ env: {} });
    {
      const order = () => fetch(`${url}/api/orders/1`).then((r) => r.json()) as Promise<{ state: string; invoiceId: string | null }>;
      if (!created?.invoiceId) {
        // The crash came before the customer saw a QR: recovery gets the invoice with the same key.
        await waitFor(async () => (await order()).state === 'awaiting_payment', { what: 'the recovered order' });
        const { invoiceId } = await order();
        expect((await post(`${url}/sandbox/pay/${invoiceId}`)).status).toBe(204);
      }
      const expected = EXPECTED[point];
      await waitFor(async () => (await order()).state === expected.state, { what: `state ${expected.state}`, timeoutMs: 30_000 });
      expect(svc.readSimLog().filter((l) => l.orderId === 1)).toHaveLength(expected.actuations);

      const db = new Database(svc.dbPath, { readonly: true });
      const unsettled = db
        .prepare(
          `SELECT count(*) AS n FROM orders WHERE paid_at IS NOT NULL AND state NOT IN ('vended', 'refunded', 'vend_uncertain', 'vending', 'refunding')`,
        )
        .get() as { n: number };
      expect(unsettled.n).toBe(0);
      if (expected.state === 'vend_uncertain') {
        expect(db.prepare('SELECT name FROM alarms').all()).toEqual([{ name: 'vend_uncertain/1' }]);
      }
      db.close();
      const sandbox = new Database(join(svc.dir, 'sandbox.db'), { readonly: true });
      expect(sandbox.prepare('SELECT reference, count(*) AS n FROM sandbox_invoices GROUP BY reference').all()).toEqual([
        { reference: expect.stringMatching(/-1-[0-9a-f]{8}$/), n: 1 },
      ]);
      sandbox.close();
    }
  });
});
