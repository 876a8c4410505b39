import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../../src/util/index.js';
import { isRecord } from '../../../src/payments/http.js';
import { mapGeregeStatus } from '../../../src/payments/adapters.js';
import { overSimulator, providerContract } from './provider-contract.js';
import { harnessPerTest, orderRequest, type Harness } from './provider-harness.js';

function objectOf(body: unknown): Record<string, unknown> | undefined {
  return isRecord(body) && isRecord(body.data) && isRecord(body.data.object) ? body.data.object : undefined;
}

describe('Gerege adapter against the simulator', () => {
  providerContract({
    ...overSimulator('gerege', { createPath: /^\/payment-intents$/, refundPath: /^\/payment-intents\/[^/]+\/refunds$/ }),
    unknownInvoiceId: 'pi_missing',
    // The intent stays succeeded (docs/providers.md): the refund is a `re_…` object, seen as its event.
    statusAfterFullRefund: 'paid',
    mapStatus: mapGeregeStatus,
    statusWordOf: (body) => {
      const object = objectOf(body);
      return object?.object === 'payment_intent' && typeof object.status === 'string' ? object.status : undefined;
    },
    expectedEventId: (body) => (body as { id: string }).id,
  });

  describe('Gerege only', () => {
    const start = harnessPerTest('gerege');
    const tokenCalls = (h: Harness) => h.requestsTo(/^\/oauth2\/token$/).length;
    const unauthorized = (h: Harness) => h.records().requests.filter((r) => r.status === 401).length;

    it('a token is reused, then refreshed ahead of its expiry without a single 401', async () => {
      const h = await start({ tokenTtlSec: 120 });
      const invoice = await h.provider.createInvoice(orderRequest());
      await h.provider.getInvoice(invoice.id);
      expect(tokenCalls(h)).toBe(1);
      h.clock.advance(61_000);
      await h.provider.getInvoice(invoice.id);
      expect(tokenCalls(h)).toBe(2);
      expect(unauthorized(h)).toBe(0);
    });

    it('a token the provider stopped accepting is refreshed once and the call repeated', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      h.sim.revokeTokens();
      await expect(h.provider.getInvoice(invoice.id)).resolves.toMatchObject({ id: invoice.id });
      expect(tokenCalls(h)).toBe(2);
      expect(unauthorized(h)).toBe(1);
    });

    it("a token that expired by the provider's clock (ours lags) is refreshed on the 401", async () => {
      const simClock = createManualClock();
      const h = await start({ simClock, tokenTtlSec: 300 });
      const invoice = await h.provider.createInvoice(orderRequest());
      simClock.advance(301_000);
      await expect(h.provider.getInvoice(invoice.id)).resolves.toMatchObject({ id: invoice.id });
      expect(unauthorized(h)).toBe(1);
      expect(tokenCalls(h)).toBe(2);
    });

    it('a token refresh in the middle of a create keeps one intent', async () => {
      const h = await start();
      await h.provider.checkCredentials();
      h.sim.revokeTokens();
      const request = orderRequest();
      await h.provider.createInvoice(request);
      expect(h.records().invoices.filter((i) => i.idempotencyKey === request.idempotencyKey)).toHaveLength(1);
    });

    it('409 idempotency_conflict (same key, another body) is never retried', async () => {
      const h = await start();
      const request = orderRequest();
      await h.provider.createInvoice(request);
      await expect(h.provider.createInvoice({ ...request, amount: 2_000 })).rejects.toMatchObject({
        kind: 'conflict',
        providerCode: 'idempotency_conflict',
      });
      expect(h.records().createCalls.map((c) => c.outcome)).toEqual(['created', 'conflict']);
      expect(h.delays).toEqual([]);
    });

    it('manual capture: paid means authorized until captured', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest({ captureMode: 'manual' }));
      expect(h.records().invoices[0]!.captureMethod).toBe('manual');
      await h.sim.pay(invoice.id);
      expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'authorized', providerStatus: 'requires_capture' });
      expect(await h.provider.captureInvoice(invoice.id)).toMatchObject({ status: 'paid' });
      expect(await h.provider.captureInvoice(invoice.id)).toMatchObject({ status: 'paid' });
    });

    it('lists events oldest first with paging, each with the body a webhook would carry', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      await h.sim.pay(invoice.id);
      const all = await h.provider.listEvents!({ createdAfterSec: 0 });
      expect(all.hasMore).toBe(false);
      expect(all.events.map((e) => e.event.type)).toEqual([
        'payment_intent.created',
        'payment_intent.claimed',
        'payment_intent.processing',
        'payment_intent.succeeded',
      ]);
      expect(all.events.every((e) => e.event.objectId === invoice.id)).toBe(true);
      expect(all.events.map((e) => JSON.parse(e.rawBody.toString()))).toEqual(h.records().events);
      const rest = await h.provider.listEvents!({ startingAfter: all.events[1]!.event.eventId });
      expect(rest.events.map((e) => e.event.eventId)).toEqual(all.events.slice(2).map((e) => e.event.eventId));
    });

    it('a refund event points the core at its payment intent', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      await h.sim.pay(invoice.id);
      await h.provider.refund({ invoiceId: invoice.id, amount: 500, idempotencyKey: 'partial-refund' });
      const page = await h.provider.listEvents!({});
      const refundEvent = page.events.find((e) => e.event.type === 'refund.succeeded');
      expect(refundEvent?.event.objectId).toBe(invoice.id);
    });
  });
});
