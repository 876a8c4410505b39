import { afterEach, describe, expect, it } from 'vitest';
import { startGeregeStack, type GeregeStack } from '../chaos/stack.js';
import { geregeClient, intentBody } from '../../simulator/harness.js';
import { waitFor } from '../../helpers/service.js';
import { NO_FAULTS } from '../../../src/simulator/index.js';

/**
 * Issue 23, the orphan sweep: an invoice at the provider under this device's reference prefix that
 * the database does not know (its order was lost: a power cut before the create answer was stored,
 * a restored database) is settled by the reconciler — refunded when paid, an alarm either way. The
 * real service against the Gerege simulator; the intent is made at the simulator directly, as the
 * lost order's create call made it.
 */

let stack: GeregeStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

async function orphanIntent(s: GeregeStack, reference: string): Promise<string> {
  const info = s.sim.info();
  const api = await geregeClient(s.sim, { id: info.clientId!, secret: info.clientSecret! });
  const created = await api.post('/payment-intents', intentBody({ reference }), `${reference}-pay`);
  expect(created.status).toBe(201);
  return created.json.id as string;
}

describe("gerege: an invoice under this device's reference that no order knows", () => {
  it('paid: refunded in full with an alarm, never vended; an unpaid one beside it is left alone', { timeout: 120_000 }, async () => {
    const s = (stack = await startGeregeStack({ config: { device: { id: `orph-${process.pid}` } } }));
    const prefix = `orph-${process.pid}-lostdb-7`;
    const paid = await orphanIntent(s, `${prefix}-a1b2c3d4`);
    const open = await orphanIntent(s, `${prefix}-e5f6a7b8`);
    const foreign = await orphanIntent(s, `someone-else-1-9-00000000`);
    await s.sim.pay(paid);
    await s.sim.pay(foreign);
    await waitFor(
      () =>
        s.query('SELECT 1 FROM webhook_events WHERE object_id = ?', paid).length > 0 &&
        s.query('SELECT 1 FROM webhook_events WHERE object_id = ?', foreign).length > 0,
      30_000,
      'the payment webhooks in the inbox',
    );

    // The next start's sweep (and every reconcile pass after it).
    await s.svc.kill('SIGTERM');
    await s.svc.restart();

    await waitFor(() => s.sim.records().refunds.some((r) => r.invoiceId === paid), 60_000, 'the orphan refunded');
    const refunds = s.sim.records().refunds.filter((r) => r.invoiceId === paid);
    expect(refunds.map((r) => r.amount)).toEqual([1500]);
    expect(refunds[0]!.idempotencyKey).toBe(`${prefix}-a1b2c3d4-orphan-refund`);
    await waitFor(() => s.query('SELECT 1 FROM alarms WHERE name = ?', `orphan_invoice/${paid}`).length === 1, 30_000, 'the orphan alarm');
    expect(s.svc.readSimLog()).toHaveLength(0);
    // Another device's payment and a still-payable intent are not ours to settle.
    expect(s.sim.records().refunds.filter((r) => r.invoiceId === foreign || r.invoiceId === open)).toEqual([]);
    expect(s.query('SELECT name FROM alarms WHERE name IN (?, ?)', `orphan_invoice/${open}`, `orphan_invoice/${foreign}`)).toEqual([]);
  });

  it(
    'found only by the Events API at start (its webhook never came): refunded once that read is in, not a reconcile pass later',
    { timeout: 120_000 },
    async () => {
      const s = (stack = await startGeregeStack({ config: { device: { id: `orph8-${process.pid}` } } }));
      const reference = `orph8-${process.pid}-lostdb-3-0c0ffee0`;
      await s.svc.kill('SIGTERM');
      // While the device is off: the orphan is paid and its webhooks are lost.
      s.sim.setFaults({ dropWebhook: 1 });
      const paid = await orphanIntent(s, reference);
      await s.sim.pay(paid);
      // The start-up Events API read fails at first, so the sweep at start cannot see the orphan;
      // the reconcile pass (and its sweep) is an hour away (poll.reconcileEveryMin 60).
      s.sim.setFaults({ dropWebhook: 1, serverError: 1 });
      const before = s.svc.logs().length;
      await s.svc.restart();
      await waitFor(
        () => {
          const run = s.svc.logs().slice(before);
          return run.some((l) => l.msg === 'vendgate ready') && run.some((l) => l.msg === 'backfill failed; will retry');
        },
        30_000,
        'the service up, its start-up Events API read failed',
      );
      expect(s.query('SELECT 1 FROM webhook_events WHERE object_id = ?', paid)).toEqual([]);
      s.sim.setFaults({ ...NO_FAULTS });

      await waitFor(() => s.sim.records().refunds.some((r) => r.invoiceId === paid), 30_000, 'the orphan refunded after the read');
      expect(
        s.sim
          .records()
          .refunds.filter((r) => r.invoiceId === paid)
          .map((r) => r.idempotencyKey),
      ).toEqual([`${reference}-orphan-refund`]);
      expect(s.svc.readSimLog()).toHaveLength(0);
    },
  );
});
