import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startProviderStack, type ProviderStack } from '../chaos/stack.js';

import { signGeregeWebhook } from '../../../src/simulator/signing.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * Refund evidence counts only when the provider confirms it to the device's own credentials. A
 * Gerege `refund.succeeded` body is signed with the webhook secret, which every relay replica holds:
 * it is a claim until the Events API (read with the device's token) lists the same event with the
 * same refund. A claim the provider never confirms is a `forged_event` alarm and stops nothing; a
 * confirmed refund after a delivered vend is an alarm for a person and, when the sale was receipted,
 * its fiscal return, once. The real service against the Gerege simulator over HTTP.
 */

let stack: ProviderStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

const alarmsLike = (s: ProviderStack, pattern: string) =>
  s.query<{ name: string; severity: string; detail: string }>('SELECT name, severity, detail FROM alarms WHERE name LIKE ?', pattern);

/** A signed `refund.succeeded` the provider never sent: what anyone holding the webhook secret can post. */
async function postForgedRefund(s: ProviderStack, invoiceId: string, amount: number, tag: string): Promise<string> {
  const eventId = `evt_forged${tag}${process.pid}`;
  const now = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    id: eventId,
    object: 'event',
    type: 'refund.succeeded',
    livemode: false,
    created: now,
    data: { object: { id: `re_forged${tag}${process.pid}`, object: 'refund', payment_intent: invoiceId, amount, status: 'succeeded' } },
  });
  const answer = await fetch(`${s.svc.webhookUrl}/webhooks/gerege`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'gerege-event-id': eventId,
      'gerege-signature': signGeregeWebhook(s.sim.info().webhookSecret, body, now),
    },
    body,
  });
  expect(answer.status).toBe(200);
  return eventId;
}

describe('gerege: a refund claim counts only when the provider confirms it', () => {
  it(
    'a forged signed refund.succeeded, then the customer really pays: the order is vended, never refunded with no refund, and forged_event is raised',
    { timeout: 120_000 },
    async () => {
      const s = (stack = await startProviderStack({ provider: 'gerege', readyTimeoutMs: 60_000 }));
      const placed = await s.placeOrder();
      const eventId = await postForgedRefund(s, placed.invoiceId!, 1500, 'a');
      // The claim has been looked at before the customer pays.
      await waitFor(() => s.query('SELECT 1 FROM webhook_events WHERE event_id = ? AND processed_at IS NOT NULL', eventId).length === 1, {
        timeoutMs: 60_000,
        what: 'the forged refund claim processed',
      });
      await s.sim.pay(placed.invoiceId!);

      const settled = await s.waitSettled(placed.orderId, 60_000);
      expect(settled.state).toBe('vended');
      expect(s.actuationsByOrder().get(placed.orderId)).toBe(1);
      expect(s.sim.records().refunds.filter((r) => r.invoiceId === placed.invoiceId)).toEqual([]);
      const [alarm] = alarmsLike(s, 'forged_event/%');
      expect(alarm?.severity).toBe('critical');
      expect(JSON.parse(alarm!.detail)).toMatchObject({
        eventId,
        invoiceId: placed.invoiceId,
        claimed: { refundId: `re_forgeda${process.pid}`, amount: 1500 },
      });
    },
  );

  it(
    'a dashboard refund after a receipted vend: confirmed by the Events API, an alarm for a person, and exactly one return receipt',
    { timeout: 120_000 },
    async () => {
      const s = (stack = await startProviderStack({
        provider: 'gerege',
        readyTimeoutMs: 60_000,
        config: { fiscal: { register: 'sandbox' } },
      }));
      const placed = await s.placeOrder();
      await s.sim.pay(placed.invoiceId!);
      expect((await s.waitSettled(placed.orderId, 60_000)).state).toBe('vended');
      await waitFor(
        () => s.query("SELECT 1 FROM receipts WHERE order_id = ? AND kind = 'sale' AND state = 'issued'", placed.orderId).length === 1,
        { timeoutMs: 60_000, what: 'the sale receipt issued' },
      );

      // The merchant refunds the sale in the provider's dashboard (the simulator's admin route).
      const refunded = await fetch(`${s.sim.url}/__sim/refund/${placed.invoiceId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ amount: 1500 }),
      });
      expect(refunded.status).toBe(200);

      await waitFor(
        () => s.query("SELECT 1 FROM receipts WHERE order_id = ? AND kind = 'return' AND state = 'issued'", placed.orderId).length === 1,
        { timeoutMs: 60_000, what: 'the return receipt issued' },
      );
      await waitFor(() => alarmsLike(s, `refunded_after_vend/${placed.orderId}`).length === 1, { what: 'the alarm for a person' });
      expect((await s.order(placed.orderId))!.state).toBe('refunded');
      // Nothing of ours was sent: the money went back at the provider, once.
      expect(s.sim.records().refunds.filter((r) => r.invoiceId === placed.invoiceId)).toHaveLength(1);

      // The event delivered again and the Events API read again change nothing: still one return.
      await s.svc.kill('SIGTERM');
      await s.svc.restart();
      await waitFor(() => s.svc.logs().some((l) => l.msg === 'backfill done'), { what: 'the start-up backfill' });
      expect(s.query("SELECT count(*) AS n FROM receipts WHERE order_id = ? AND kind = 'return'", placed.orderId)).toEqual([{ n: 1 }]);
      const register = new Database(join(s.svc.dir, 'fiscal-sandbox.db'), { readonly: true });
      try {
        const kinds = register.prepare('SELECT kind FROM sandbox_receipts ORDER BY created_at').all() as { kind: string }[];
        expect(kinds.map((k) => k.kind)).toEqual(['sale', 'return']);
      } finally {
        register.close();
      }
    },
  );
});
