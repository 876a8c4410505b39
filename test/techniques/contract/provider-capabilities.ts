/**
 * What the contract checks instead, when a provider lacks a capability by design (the sandbox has no
 * network, no credentials, one pay page that pays the invoice amount, whole refunds only, no
 * redelivery). Each case
 * states the reason the target gave and holds the provider to it: a lack that stops being true —
 * a sandbox that starts calling out, or sending an event twice — fails here, not silently.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { findInvoiceMismatch } from '../../../src/payments/index.js';
import { orderRequest, refundPaidInvoice, WEBHOOK_SECRET, type ContractHarness } from './provider-harness.js';

/** The provider has no such capability, and why. */
export interface ByDesign {
  byDesign: string;
}

export function isByDesign(capability: object): capability is ByDesign {
  return 'byDesign' in capability;
}

type Start = (options?: { webhooks?: boolean }) => Promise<ContractHarness>;

export const byDesignCases = {
  network(reason: string, start: Start): void {
    afterEach(() => {
      vi.unstubAllGlobals();
    });
    it(`network: none (${reason}) — no call touches it, so the retry matrix has nothing to retry`, async () => {
      const calls: string[] = [];
      vi.stubGlobal('fetch', async (input: unknown) => {
        calls.push(String(input));
        throw new TypeError('fetch failed: the network is cut off in this test');
      });
      const h = await start();
      const request = orderRequest();
      const paid = await h.provider.createInvoice(request);
      expect((await h.provider.createInvoice(request)).id).toBe(paid.id);
      await h.pay(paid.id);
      expect((await h.provider.getInvoice(paid.id)).status).toBe('paid');
      const other = await h.provider.createInvoice(orderRequest());
      expect((await h.provider.cancelInvoice(other.id)).status).toBe('canceled');
      expect(await h.provider.refund({ invoiceId: paid.id, amount: 1500, idempotencyKey: `${paid.reference}-refund` })).toMatchObject({
        status: 'succeeded',
      });
      await h.provider.checkCredentials();
      await h.provider.listEvents?.({});
      expect(calls).toEqual([]);
    });
  },

  credentials(reason: string, start: Start): void {
    it(`credentials: none (${reason}) — it answers with none configured and never takes real money`, async () => {
      const h = await start();
      await expect(h.provider.checkCredentials()).resolves.toMatchObject({ detail: expect.any(String) });
      const invoice = await h.provider.createInvoice(orderRequest());
      await h.pay(invoice.id);
      expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'paid', livemode: false });
    });
  },

  anotherAmountPaid(reason: string, start: Start): void {
    it(`another amount paid: impossible (${reason}) — a paid invoice still matches its request`, async () => {
      const h = await start();
      const request = orderRequest();
      const invoice = await h.provider.createInvoice(request);
      await h.pay(invoice.id);
      const replay = await h.provider.createInvoice(request);
      expect(replay).toMatchObject({ id: invoice.id, status: 'paid', replayed: true });
      expect(findInvoiceMismatch(request, replay)).toEqual([]);
    });
  },

  partialRefunds(reason: string, start: Start): void {
    it(`partial refunds: none (${reason}) — a request for part is refused and moves nothing, never widened to the whole`, async () => {
      const h = await start();
      const { invoice, result } = await refundPaidInvoice(h, 500);
      expect(result.status).toBe('failed');
      expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'paid', refundedAmount: 0 });
      expect(h.refundsMade()).toBe(0);
    });
  },

  duplicateDeliveries(reason: string, start: Start): void {
    it(`duplicate deliveries: none (${reason}) — one per status change, and the Events API serves the same dedupe keys`, async () => {
      const h = await start({ webhooks: true });
      const paid = await h.provider.createInvoice(orderRequest());
      await h.pay(paid.id);
      const canceled = await h.provider.createInvoice(orderRequest());
      await h.provider.cancelInvoice(canceled.id);
      await h.provider.refund({ invoiceId: paid.id, amount: 1500, idempotencyKey: `${paid.reference}-refund` });
      await h.deliveriesIdle();
      const context = { secrets: [WEBHOOK_SECRET], toleranceSec: 300, now: h.clock.now() };
      const delivered = h.webhooks.map(({ rawBody, headers }) => h.provider.verifyWebhook(rawBody, headers, context).event.eventId);
      expect(delivered).toHaveLength(h.events().length);
      expect(new Set(delivered).size).toBe(delivered.length);
      // A delivery that never reached the listener is caught up from the Events API, under the same key.
      expect(h.provider.listEvents).toBeDefined();
      const page = await h.provider.listEvents!({});
      expect(page.events.map((e) => e.event.eventId)).toEqual(delivered);
    });
  },
};
