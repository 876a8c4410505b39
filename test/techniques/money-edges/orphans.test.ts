import { existsSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGeregeStack, type GeregeStack, type OrderAnswer } from '../chaos/stack.js';
import { geregeClient, intentBody } from '../../simulator/harness.js';

import { NO_FAULTS } from '../../../src/simulator/index.js';
import { signGeregeWebhook } from '../../../src/simulator/signing.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * The orphan sweep: an invoice at the provider under this device's reference that the database does
 * not know. The create answer is on disk before a QR is shown, so a PAID invoice no order knows means
 * the database lost history (a new or replaced database, a restore): goods may have gone out for it.
 * It is parked for a person with a critical alarm, never refunded by itself. The reference and amount
 * come from the provider's own read, never from an event body; a body the provider contradicts is a
 * `forged_event` and changes nothing. The real service against the Gerege simulator over HTTP.
 */

let stack: GeregeStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

async function intentAtProvider(s: GeregeStack, reference: string, amount = 1500): Promise<string> {
  const info = s.sim.info();
  const api = await geregeClient(s.sim, { id: info.clientId!, secret: info.clientSecret! });
  const created = await api.post('/payment-intents', intentBody({ reference, amount }), `${reference}-pay`);
  expect(created.status).toBe(201);
  return created.json.id as string;
}

const alarmsLike = (s: GeregeStack, pattern: string) =>
  s.query<{ name: string; severity: string; message: string; detail: string }>(
    'SELECT name, severity, message, detail FROM alarms WHERE name LIKE ? ORDER BY name',
    pattern,
  );
const refundsOf = (s: GeregeStack, invoiceIds: string[]) => s.sim.records().refunds.filter((r) => invoiceIds.includes(r.invoiceId));

/** What a person needs in a parked orphan's alarm: which invoice, whose reference, how much, and the command that settles it. */
function expectParked(s: GeregeStack, invoiceId: string, reference: string, amount: number) {
  const [alarm] = alarmsLike(s, `orphan_invoice/${invoiceId}`);
  expect(alarm, `the orphan alarm of ${invoiceId}`).toBeDefined();
  expect(alarm!.severity).toBe('critical');
  const detail = JSON.parse(alarm!.detail);
  expect(detail).toMatchObject({
    invoiceId,
    reference,
    amount,
    refunded: 0,
    currency: 'MNT',
    status: 'succeeded',
    settle: expect.any(String),
  });
  expect(detail.settle).toContain(`vendgate settle orphan_invoice/${invoiceId}`);
  expect(s.query('SELECT state FROM orphan_invoices WHERE invoice_id = ?', invoiceId)).toEqual([{ state: 'person' }]);
}

describe("gerege: a paid invoice under this device's reference that no order knows", () => {
  it(
    'is parked for a person with a critical alarm, never refunded; an unpaid one and another device’s are left alone',
    { timeout: 120_000 },
    async () => {
      const s = (stack = await startGeregeStack({ readyTimeoutMs: 60_000, config: { device: { id: `orph-${process.pid}` } } }));
      const prefix = `orph-${process.pid}-lostdb-7`;
      const paid = await intentAtProvider(s, `${prefix}-a1b2c3d4`);
      const open = await intentAtProvider(s, `${prefix}-e5f6a7b8`);
      const foreign = await intentAtProvider(s, `someone-else-1-9-00000000`);
      await s.sim.pay(paid);
      await s.sim.pay(foreign);
      await waitFor(
        () =>
          s.query('SELECT 1 FROM webhook_events WHERE object_id = ?', paid).length > 0 &&
          s.query('SELECT 1 FROM webhook_events WHERE object_id = ?', foreign).length > 0,
        { what: 'the payment webhooks in the inbox' },
      );

      // The next start's sweep (and every reconcile pass after it).
      await s.svc.kill('SIGTERM');
      await s.svc.restart();

      await waitFor(() => alarmsLike(s, `orphan_invoice/${paid}`).length === 1, { timeoutMs: 60_000, what: 'the orphan alarm' });
      expect(refundsOf(s, [paid, open, foreign])).toEqual([]);
      expectParked(s, paid, `${prefix}-a1b2c3d4`, 1500);
      expect(s.svc.readSimLog()).toHaveLength(0);
      // Another device's payment and a still-payable intent are not ours to settle.
      expect(alarmsLike(s, `orphan_invoice/${open}`)).toEqual([]);
      expect(alarmsLike(s, `orphan_invoice/${foreign}`)).toEqual([]);
    },
  );

  it(
    'found only by the Events API at start (its webhook never came): parked once that read is in, never refunded',
    { timeout: 120_000 },
    async () => {
      const s = (stack = await startGeregeStack({ readyTimeoutMs: 60_000, config: { device: { id: `orph8-${process.pid}` } } }));
      const reference = `orph8-${process.pid}-lostdb-3-0c0ffee0`;
      await s.svc.kill('SIGTERM');
      // While the device is off: the orphan is paid and its webhooks are lost.
      s.sim.setFaults({ dropWebhook: 1 });
      const paid = await intentAtProvider(s, reference);
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
        { what: 'the service up, its start-up Events API read failed' },
      );
      expect(s.query('SELECT 1 FROM webhook_events WHERE object_id = ?', paid)).toEqual([]);
      s.sim.setFaults({ ...NO_FAULTS });

      await waitFor(() => alarmsLike(s, `orphan_invoice/${paid}`).length === 1, { what: 'the orphan parked after the read' });
      expect(refundsOf(s, [paid])).toEqual([]);
      expectParked(s, paid, reference, 1500);
    },
  );

  it(
    'an empty database after 3 delivered sales (the files moved aside, as a damaged card is handled): 3 parked orphans, no refund',
    { timeout: 180_000 },
    async () => {
      const s = (stack = await startGeregeStack({
        readyTimeoutMs: 60_000,
        config: { device: { id: `empty-${process.pid}` }, poll: { intervalMs: 200 } },
      }));
      const sales: OrderAnswer[] = [];
      for (let i = 0; i < 3; i += 1) {
        const answer = await s.call('POST', '/api/orders', { slot: 'A1' });
        expect(answer.status).toBe(201);
        const placed = answer.json as OrderAnswer;
        await s.sim.pay(placed.invoiceId!);
        expect((await s.waitSettled(placed.orderId, 60_000)).state).toBe('vended');
        sales.push(placed);
      }
      expect(s.svc.readSimLog()).toHaveLength(3);

      await s.svc.kill('SIGTERM');
      const aside = join(s.svc.dir, 'aside');
      mkdirSync(aside);
      for (const name of readdirSync(s.svc.dir).filter((n) => n.startsWith('vendgate.db')))
        renameSync(join(s.svc.dir, name), join(aside, name));
      expect(existsSync(s.svc.dbPath)).toBe(false);
      await s.svc.restart();

      const invoices = sales.map((sale) => sale.invoiceId!);
      await waitFor(() => invoices.every((id) => alarmsLike(s, `orphan_invoice/${id}`).length === 1), {
        timeoutMs: 60_000,
        what: 'the 3 delivered sales parked as orphans',
      });
      expect(refundsOf(s, invoices)).toEqual([]);
      for (const sale of sales) expectParked(s, sale.invoiceId!, sale.reference, 1500);
      // Nothing was vended again either.
      expect(s.svc.readSimLog()).toHaveLength(3);
    },
  );

  it(
    "a forged reference: a signed event naming another device's paid intent under this device's reference refunds nothing and raises forged_event",
    { timeout: 120_000 },
    async () => {
      const deviceA = `deva-${process.pid}`;
      const s = (stack = await startGeregeStack({ readyTimeoutMs: 60_000, config: { device: { id: deviceA } } }));
      // Device B's delivered sale, at the same merchant.
      const theirs = await intentAtProvider(s, `devb-${process.pid}-x1y2-4-0badf00d`);
      await s.sim.pay(theirs);
      const intent = theirs;
      // A relay replica (it holds the webhook secret) publishes a body with A's reference on it.
      const claimed = `${deviceA}-lostdb-9-deadbeef`;
      const now = Math.floor(Date.now() / 1000);
      const body = JSON.stringify({
        id: `evt_forged${process.pid}`,
        object: 'event',
        type: 'payment_intent.succeeded',
        livemode: false,
        created: now,
        data: {
          object: {
            id: intent,
            object: 'payment_intent',
            status: 'succeeded',
            amount: 1500,
            currency: 'MNT',
            reference: claimed,
            livemode: false,
            created: now,
          },
        },
      });
      const delivered = await fetch(`${s.svc.webhookUrl}/webhooks/gerege`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'gerege-event-id': `evt_forged${process.pid}`,
          'gerege-signature': signGeregeWebhook(s.sim.info().webhookSecret, body, now),
        },
        body,
      });
      expect(delivered.status).toBe(200);

      // The next start sweeps (and every reconcile pass after it).
      await s.svc.kill('SIGTERM');
      await s.svc.restart();
      await waitFor(() => alarmsLike(s, `forged_event/%`).length === 1, { timeoutMs: 60_000, what: 'the forged_event alarm' });
      const [alarm] = alarmsLike(s, 'forged_event/%');
      expect(alarm!.severity).toBe('critical');
      expect(JSON.parse(alarm!.detail)).toMatchObject({
        invoiceId: intent,
        claimed: { reference: claimed },
        provider: { reference: `devb-${process.pid}-x1y2-4-0badf00d` },
      });
      expect(refundsOf(s, [intent])).toEqual([]);
      expect(alarmsLike(s, `orphan_invoice/${intent}`)).toEqual([]);
    },
  );
});
