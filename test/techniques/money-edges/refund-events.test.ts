import { afterEach, describe, expect, it } from 'vitest';
import { startProviderStack, type ProviderStack, type OrderAnswer } from '../chaos/stack.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * A Gerege refund made before the vend (the merchant's dashboard) is a `re_…` object; the
 * intent stays `succeeded` and says nothing of it (docs/providers.md). The simulator serves the wire
 * format as written (no `amount_refunded`), so the only evidence is the verified `refund.succeeded`
 * event — by webhook, or from the Events API. Either stops the vend; a partial one returns the rest.
 * The real service over HTTP; a slow poller, so the device has not read the payment before the event.
 */

let stack: ProviderStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

const refundsAtProvider = (s: ProviderStack, invoiceId: string) => s.sim.records().refunds.filter((r) => r.invoiceId === invoiceId);
const alarms = (s: ProviderStack, prefix: string) => s.query<{ name: string }>('SELECT name FROM alarms WHERE name LIKE ?', `${prefix}%`);

async function waitingOrder(s: ProviderStack): Promise<OrderAnswer> {
  const placed = await s.placeOrder();
  // Both first reads are done — the poller's (its next is a minute away) and the webhook worker's
  // for payment_intent.created — before the customer pays.
  await waitFor(
    () =>
      s.sim.records().getCalls.filter((c) => c.id === placed.invoiceId).length >= 2 &&
      s.query(
        "SELECT 1 FROM webhook_events WHERE object_id = ? AND type = 'payment_intent.created' AND processed_at IS NOT NULL",
        placed.invoiceId,
      ).length === 1,
    { timeoutMs: 60_000, what: 'the first poll of the invoice and its created event processed' },
  );
  return placed;
}

async function refundedWithoutVend(s: ProviderStack, placed: OrderAnswer, refundedTotal: number, refundCount: number) {
  const settled = await s.waitSettled(placed.orderId, 60_000);
  const history = s.query('SELECT from_state, to_state, reason FROM order_history WHERE order_id = ? ORDER BY rowid', placed.orderId);
  const ledger = s.query('SELECT status, channel, evidence FROM invoice_status_ledger WHERE order_id = ? ORDER BY rowid', placed.orderId);
  expect(settled.state, JSON.stringify({ history, ledger }, null, 1)).toBe('refunded');
  expect(s.svc.readSimLog()).toHaveLength(0);
  const refunds = refundsAtProvider(s, placed.invoiceId!);
  expect(refunds.reduce((sum, r) => sum + r.amount, 0)).toBe(refundedTotal);
  expect(refunds).toHaveLength(refundCount);
  expect(alarms(s, `refunded_elsewhere/${placed.orderId}`)).toHaveLength(1);
}

describe('gerege: a refund made before the vend, seen as its event only', () => {
  /**
   * On a Gerege stack whose poller reads once a minute, an order waiting, paid with the payment's
   * webhook lost, then `amount` of it refunded from the dashboard: the refund's event arrives.
   */
  async function paidUnseenThenRefundedOutside(amount: number) {
    const s = (stack = await startProviderStack({ provider: 'gerege', readyTimeoutMs: 60_000, config: { poll: { intervalMs: 60_000 } } }));
    const placed = await waitingOrder(s);
    s.sim.setFaults({ dropWebhook: 1 });
    await s.sim.pay(placed.invoiceId!);
    s.sim.setFaults({ dropWebhook: 0 });
    s.sim.refundOutside(placed.invoiceId!, amount);
    return { s, placed };
  }

  it('webhook: the refund.succeeded event arrives first: nothing is vended, no refund of ours is sent', { timeout: 120_000 }, async () => {
    const { s, placed } = await paidUnseenThenRefundedOutside(1500);
    await refundedWithoutVend(s, placed, 1500, 1);
  });

  it('webhook: a partial refund first: nothing is vended and the rest goes back', { timeout: 120_000 }, async () => {
    const { s, placed } = await paidUnseenThenRefundedOutside(500);
    await refundedWithoutVend(s, placed, 1500, 2);
    expect(refundsAtProvider(s, placed.invoiceId!).map((r) => r.amount)).toEqual([500, 1000]);
  });

  it(
    'Events API: paid and refunded while the device was off, no webhook at all: nothing is vended after the restart',
    { timeout: 120_000 },
    async () => {
      const s = (stack = await startProviderStack({
        provider: 'gerege',
        readyTimeoutMs: 60_000,
        config: { poll: { intervalMs: 60_000 } },
      }));
      const placed = await waitingOrder(s);
      await s.svc.kill('SIGTERM');
      s.sim.setFaults({ dropWebhook: 1 });
      await s.sim.pay(placed.invoiceId!);
      s.sim.refundOutside(placed.invoiceId!, 1500);
      await s.svc.restart();

      await refundedWithoutVend(s, placed, 1500, 1);
      expect(s.query("SELECT count(*) AS n FROM webhook_events WHERE source = 'backfill' AND refund_id IS NOT NULL")[0]!.n).toBe(1);
    },
  );
});
