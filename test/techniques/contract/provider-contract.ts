/**
 * The provider contract: the same cases, run against every provider the gateway can be configured
 * with — each real adapter over HTTP against the simulator, and the sandbox (the demo's provider)
 * in process. A case here states what the core may rely on whichever provider is configured. A
 * provider that lacks a capability by design says so in its target, and the contract then checks
 * that the lack is what the target says (provider-capabilities.ts), instead of skipping the cases.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { findInvoiceMismatch, ProviderError, WebhookVerificationError, type CanonicalStatus } from '../../../src/payments/index.js';
import type { ProviderName } from '../../../src/payments/types.js';
import type { FaultName } from '../../../src/simulator/index.js';
import {
  orderRequest,
  refundPaidInvoice,
  startHarness,
  WEBHOOK_SECRET,
  type ContractHarness,
  type Harness,
  type HarnessOptions,
  type ProviderUnderTest,
} from './provider-harness.js';
import { byDesignCases, isByDesign, type ByDesign } from './provider-capabilities.js';
import { waitFor } from '../../helpers/wait.js';

/** Over HTTP against the simulator: the retry matrix, injected faults, unknown refund outcomes. */
export interface OverHttp {
  start(options: HarnessOptions): Promise<Harness>;
  createPath: RegExp;
  refundPath: RegExp;
}

export interface ContractTarget {
  name: ProviderName;
  /** Builds the provider for the cases every provider meets. */
  start(options?: { webhooks?: boolean }): Promise<ContractHarness>;
  /** An invoice id in the provider's format that it does not hold. */
  unknownInvoiceId: string;
  /** What a GET says after a full refund (Gerege reports refunds as separate `re_…` objects). */
  statusAfterFullRefund: CanonicalStatus;
  /** The adapter's table: undefined for a word it does not know. */
  mapStatus(word: string): CanonicalStatus | undefined;
  /** The provider status word inside an event body (undefined for non-invoice objects). */
  statusWordOf(eventBody: unknown): string | undefined;
  /** The dedupe key the core must get for a webhook body. */
  expectedEventId(eventBody: unknown): string;
  /** Each capability: how to exercise it, or why this provider has none by design. */
  network: OverHttp | ByDesign;
  /** Building the provider with credentials it does not accept. */
  credentials: { startWithWrongCredentials(): Promise<ContractHarness> } | ByDesign;
  /** The customer's page can pay another sum than the invoice's (a buggy wallet, a manual transfer). */
  anotherAmountPaid: { supported: true } | ByDesign;
  /** A refund of part of the amount (after a refund made elsewhere, the core asks only for the rest). */
  partialRefunds: { supported: true } | ByDesign;
  /** The provider may deliver one event twice. */
  duplicateDeliveries: { startDuplicating(): Promise<ContractHarness> } | ByDesign;
  /** Absent: the provider answers a repeated create key with the first object. */
  idempotentCreate?: ByDesign;
  /** Absent: the provider signs its webhooks and puts the object in them. */
  signedWebhooks?: ByDesign;
  /** Absent: the provider sends webhooks at all (Kaspi QR sends none: its payments are polled). */
  webhooks?: ByDesign;
}

/** The capabilities of an adapter talking HTTP to the simulator: it has every one. */
export function overSimulator(name: ProviderUnderTest, paths: { createPath: RegExp; refundPath: RegExp }) {
  return {
    name,
    start: (options: { webhooks?: boolean } = {}) => startHarness(name, options),
    network: { start: (options: HarnessOptions) => startHarness(name, options), ...paths },
    credentials: { startWithWrongCredentials: () => startHarness(name, { wrongCredentials: true }) },
    anotherAmountPaid: { supported: true as const },
    partialRefunds: { supported: true as const },
    duplicateDeliveries: { startDuplicating: () => startHarness(name, { webhooks: true, faults: { duplicateWebhook: 1 } }) },
  };
}

const CREATE_FAULTS: FaultName[] = ['rateLimit', 'serverError', 'timeout', 'lostResponse'];

export function providerContract(target: ContractTarget): void {
  let harness: ContractHarness | undefined;
  afterEach(async () => {
    await harness?.stop();
    harness = undefined;
  });
  const keep = <H extends ContractHarness>(h: H): H => (harness = h);
  const start = async (options: { webhooks?: boolean } = {}) => keep(await target.start(options));
  const network = target.network;
  const startOverHttp = async (options: HarnessOptions = {}) => keep(await (network as OverHttp).start(options));

  describe('create', () => {
    it('returns the provider object faithfully: id, open status, amount, reference, currency, expiry', async () => {
      const h = await start();
      const request = orderRequest();
      const invoice = await h.provider.createInvoice(request);
      expect(invoice).toMatchObject({ status: 'pending', amount: 1500, reference: request.reference, currency: 'KZT', livemode: false });
      expect(invoice.replayed).toBeUndefined();
      expect(invoice.payUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
      expect(invoice.expiresAt).toBeGreaterThan(h.clock.now());
      expect(h.invoices().map((i) => i.id)).toEqual([invoice.id]);
    });

    it('a double press (two concurrent creates with one key) yields one invoice', async () => {
      const h = await start();
      const request = orderRequest();
      const [a, b] = await Promise.all([h.provider.createInvoice(request), h.provider.createInvoice(request)]);
      expect(a.id).toBe(b.id);
      expect(h.invoices().filter((i) => i.idempotencyKey === request.idempotencyKey)).toHaveLength(1);
    });

    if (!isByDesign(network) && !target.idempotentCreate) {
      it.each(CREATE_FAULTS)('is idempotent under injected %s: one invoice per key, every caller gets it', async (fault) => {
        const h = await startOverHttp({ faults: { [fault]: 0.3 }, seed: 11, requestTimeoutMs: fault === 'timeout' ? 150 : undefined });
        const requests = Array.from({ length: 5 }, () => orderRequest());
        for (const request of requests) {
          const concurrent = await Promise.all([h.provider.createInvoice(request), h.provider.createInvoice(request)]);
          const again = await h.provider.createInvoice(request);
          const invoices = h.records().invoices.filter((i) => i.idempotencyKey === request.idempotencyKey);
          expect(invoices).toHaveLength(1);
          expect(new Set([...concurrent, again].map((i) => i.id))).toEqual(new Set([invoices[0]!.id]));
        }
        expect(h.records().createCalls.some((c) => c.outcome === `fault:${fault}`)).toBe(true);
      });
    }

    if (!isByDesign(network) && target.idempotentCreate) {
      const reason = target.idempotentCreate.byDesign;
      it.each<FaultName>(['serverError', 'timeout', 'lostResponse'])(
        `create: not idempotent at the provider (${reason}) — after %s the number is never sent again, a new key gets a new number`,
        async (fault) => {
          const h = await startOverHttp({ requestTimeoutMs: fault === 'timeout' ? 150 : undefined });
          const request = orderRequest();
          h.faultsForCalls(1, { [fault]: 1 });
          const err = await h.provider.createInvoice(request).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(ProviderError);
          expect((err as ProviderError).transient).toBe(true);
          await expect(h.provider.createInvoice(request)).rejects.toBeInstanceOf(ProviderError);
          expect(h.requestsTo(network.createPath)).toHaveLength(1);
          const next = await h.provider.createInvoice(orderRequest());
          expect(h.records().createCalls.at(-1)).toMatchObject({ outcome: 'created', invoiceId: next.id });
          expect(new Set(h.records().createCalls.map((c) => c.idempotencyKey)).size).toBe(2);
        },
      );
    }

    if (!isByDesign(network)) {
      it('429 waits the Retry-After the provider sent, then retries with the same key', async () => {
        const h = await startOverHttp();
        h.faultsForCalls(1, { rateLimit: 1 });
        await h.provider.createInvoice(orderRequest());
        expect(h.delays).toEqual([1_000]);
        expect(h.records().createCalls.map((c) => c.outcome)).toEqual(['fault:rateLimit', 'created']);
      });
    }

    if (!isByDesign(network) && !target.idempotentCreate) {
      it('a lost response followed by the retry yields one invoice, returned as a replay', async () => {
        const h = await startOverHttp();
        h.faultsForCalls(1, { lostResponse: 1 });
        const invoice = await h.provider.createInvoice(orderRequest());
        expect(invoice.replayed).toBe(true);
        expect(h.records().createCalls.map((c) => c.outcome)).toEqual(['fault:lostResponse', 'replayed']);
        expect(h.records().invoices.map((i) => i.id)).toEqual([invoice.id]);
      });

      it('5xx backs off 1 s, 2 s, 4 s with the same key', async () => {
        const h = await startOverHttp();
        h.faultsForCalls(3, { serverError: 1 });
        await h.provider.createInvoice(orderRequest());
        expect(h.delays).toEqual([1_000, 2_000, 4_000]);
        expect(h.records().createCalls.map((c) => c.outcome)).toEqual([
          'fault:serverError',
          'fault:serverError',
          'fault:serverError',
          'created',
        ]);
      });
    }

    if (!isByDesign(target.anotherAmountPaid)) {
      it('an invoice that differs from the request comes back as the provider says, so the core can see the mismatch', async () => {
        const h = await start();
        const request = orderRequest();
        const first = await h.provider.createInvoice(request);
        await h.pay(first.id, { amount: 999 });
        const replay = await h.provider.createInvoice(request);
        expect(replay).toMatchObject({ id: first.id, amount: 999, status: 'paid', replayed: true });
        expect(findInvoiceMismatch(request, replay)).toEqual(['amount 999 ≠ 1500']);
      });
    }
  });

  describe('read, cancel, status', () => {
    it('every status the provider produces is in the adapter table, and GET maps each outcome', async () => {
      const h = await start();
      const open = await h.provider.createInvoice(orderRequest());
      const paid = await h.provider.createInvoice(orderRequest());
      const canceled = await h.provider.createInvoice(orderRequest());
      const expired = await h.provider.createInvoice(orderRequest());
      await h.pay(paid.id);
      await h.provider.cancelInvoice(canceled.id);
      h.expire(expired.id);
      await h.provider.refund({ invoiceId: paid.id, amount: 1500, idempotencyKey: `${paid.reference}-refund` });
      expect((await h.provider.getInvoice(open.id)).status).toBe('pending');
      expect((await h.provider.getInvoice(canceled.id)).status).toBe('canceled');
      expect((await h.provider.getInvoice(expired.id)).status).toBe('expired');
      expect((await h.provider.getInvoice(paid.id)).status).toBe(target.statusAfterFullRefund);
      const words = new Set(
        h
          .events()
          .map(target.statusWordOf)
          .filter((w): w is string => w !== undefined),
      );
      expect(words.size).toBeGreaterThanOrEqual(4);
      for (const word of words) expect(target.mapStatus(word), `status word "${word}"`).toBeDefined();
    });

    it('cancel is idempotent by state and never undoes a payment', async () => {
      const h = await start();
      const a = await h.provider.createInvoice(orderRequest());
      expect((await h.provider.cancelInvoice(a.id)).status).toBe('canceled');
      expect((await h.provider.cancelInvoice(a.id)).status).toBe('canceled');
      const b = await h.provider.createInvoice(orderRequest());
      await h.pay(b.id);
      expect((await h.provider.cancelInvoice(b.id)).status).toBe('paid');
    });

    it('an unknown invoice is not_found, not a crash and not a retry loop', async () => {
      const h = await start();
      const err = await h.provider.getInvoice(target.unknownInvoiceId).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ kind: 'not_found' });
    });
  });

  describe('refund', () => {
    it('a refund of a paid invoice succeeds once', async () => {
      const h = await start();
      const { result } = await refundPaidInvoice(h, 1500);
      expect(result).toMatchObject({ status: 'succeeded', refundId: expect.any(String) });
      expect(h.refundsMade()).toBe(1);
    });

    if (!isByDesign(target.partialRefunds)) {
      it('a refund of part of the amount moves only that part', async () => {
        const h = await start();
        const { invoice, result } = await refundPaidInvoice(h, 500);
        expect(result.status).toBe('succeeded');
        // A provider whose invoice does not show its refunds (Gerege: they are `re_…` objects, seen as
        // events) still reads `paid`; the ledger learns the refund from its event.
        if (target.statusAfterFullRefund === 'paid') expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'paid' });
        else expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: 500 });
        expect(h.refundsMade()).toBe(1);
      });
    }

    if (!isByDesign(network))
      it.each<FaultName>(['lostResponse', 'serverError', 'timeout'])(
        'after %s the outcome is unknown and exactly one refund call was made',
        async (fault) => {
          const h = await startOverHttp({ requestTimeoutMs: fault === 'timeout' ? 150 : undefined });
          const invoice = await h.provider.createInvoice(orderRequest());
          await h.pay(invoice.id);
          // As the core does: a refund follows a read that saw the invoice paid.
          expect((await h.provider.getInvoice(invoice.id)).status).toBe('paid');
          h.sim.setFaults({ [fault]: 1 });
          const result = await h.provider.refund({ invoiceId: invoice.id, amount: 1500, idempotencyKey: `${invoice.reference}-refund` });
          expect(result.status).toBe('unknown');
          expect(h.requestsTo(network.refundPath)).toHaveLength(1);
          expect(h.records().refunds.length).toBe(fault === 'lostResponse' ? 1 : 0);
        },
      );
  });

  describe('credentials', () => {
    it('checkCredentials passes with good credentials, creates nothing, and reports the server date', async () => {
      const h = await start();
      const result = await h.provider.checkCredentials();
      expect(result.serverDate).toEqual(expect.any(Number));
      expect(h.invoices()).toHaveLength(0);
    });

    const credentials = target.credentials;
    if (!isByDesign(credentials)) {
      it('checkCredentials fails as an auth error with wrong credentials', async () => {
        const h = keep(await credentials.startWithWrongCredentials());
        await expect(h.provider.checkCredentials()).rejects.toMatchObject({ kind: 'auth' });
      });
    }
  });

  describe('webhooks', () => {
    if (target.webhooks) {
      const reason = target.webhooks.byDesign;
      it(`webhooks: none (${reason}) — nothing is delivered, and anything posted as one is refused`, async () => {
        const h = await start({ webhooks: true });
        const invoice = await h.provider.createInvoice(orderRequest());
        await h.pay(invoice.id);
        await h.provider.refund({ invoiceId: invoice.id, amount: 1500, idempotencyKey: `${invoice.reference}-refund` });
        await h.deliveriesIdle();
        expect(h.webhooks).toEqual([]);
        const body = Buffer.from(JSON.stringify({ QrPaymentId: Number(invoice.id), Status: 'Processed' }));
        expect(() =>
          h.provider.verifyWebhook(
            body,
            { 'content-type': 'application/json' },
            { secrets: [WEBHOOK_SECRET], toleranceSec: 300, now: h.clock.now() },
          ),
        ).toThrow(WebhookVerificationError);
        // What the core learns, it learns by reading.
        expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'refunded', refundedAmount: 1500 });
      });
    }

    if (target.signedWebhooks && !target.webhooks) {
      const reason = target.signedWebhooks.byDesign;
      it(`webhooks: unsigned (${reason}) — a delivery is a hint naming the invoice to read, never a status`, async () => {
        const h = await start({ webhooks: true });
        const invoice = await h.provider.createInvoice(orderRequest());
        await h.pay(invoice.id);
        await h.deliveriesIdle();
        expect(h.webhooks.length).toBeGreaterThan(0);
        const context = { secrets: [], toleranceSec: 300, now: h.clock.now() };
        for (const { rawBody, headers } of h.webhooks) {
          const { event } = h.provider.verifyWebhook(rawBody, headers, context);
          expect(event).toMatchObject({ objectId: invoice.id, reference: invoice.reference, livemode: null });
          // Anyone can send the same bytes: the event carries nothing a decision could be made from.
          expect(event.refund).toBeUndefined();
          expect(h.provider.verifyWebhook(Buffer.from('{"status":"PAID"}'), headers, context).event.eventId).toBe(event.eventId);
        }
      });
    }

    if (!target.signedWebhooks && !target.webhooks)
      it('verifies every webhook the provider signs, with the right dedupe key and object, and says which secret signed it', async () => {
        const h = await start({ webhooks: true });
        const invoice = await h.provider.createInvoice(orderRequest());
        await h.pay(invoice.id);
        await h.deliveriesIdle();
        expect(h.webhooks.length).toBeGreaterThan(0);
        for (const { rawBody, headers } of h.webhooks) {
          const context = { toleranceSec: 300, now: h.clock.now() };
          const { event, secretIndex } = h.provider.verifyWebhook(rawBody, headers, { ...context, secrets: ['whsec_old', WEBHOOK_SECRET] });
          // During a rotation the index tells the operator which secret the provider signs with.
          expect(secretIndex).toBe(1);
          expect(h.provider.verifyWebhook(rawBody, headers, { ...context, secrets: [WEBHOOK_SECRET, 'whsec_old'] }).secretIndex).toBe(0);
          expect(event.eventId).toBe(target.expectedEventId(JSON.parse(rawBody.toString())));
          expect(event.objectId).toBe(invoice.id);
          expect(event.livemode).toBe(false);
        }
      });

    if (!target.signedWebhooks && !target.webhooks)
      it('rejects a tampered body and a wrong secret, naming the likely mistake', async () => {
        const h = await start({ webhooks: true });
        const invoice = await h.provider.createInvoice(orderRequest());
        await h.pay(invoice.id);
        await waitFor(() => h.webhooks.length > 0, { what: 'a webhook' });
        const { rawBody, headers } = h.webhooks[0]!;
        const context = { secrets: [WEBHOOK_SECRET], toleranceSec: 300, now: h.clock.now() };
        const tampered = Buffer.from(rawBody.toString().replace('"livemode":false', '"livemode":true'));
        expect(tampered.equals(rawBody)).toBe(false);
        expect(() => h.provider.verifyWebhook(tampered, headers, context)).toThrow(WebhookVerificationError);
        const wrongSecret = (() => {
          try {
            h.provider.verifyWebhook(rawBody, headers, { ...context, secrets: ['whsec_wrong'] });
          } catch (err) {
            return err;
          }
        })();
        expect(wrongSecret).toBeInstanceOf(WebhookVerificationError);
        expect(wrongSecret).toMatchObject({ reason: 'bad_signature', message: expect.stringMatching(/secret/) });
      });

    const duplicates = target.duplicateDeliveries;
    if (!isByDesign(duplicates) && !target.webhooks) {
      it('a duplicated delivery carries the same dedupe key', async () => {
        const h = keep(await duplicates.startDuplicating());
        const invoice = await h.provider.createInvoice(orderRequest());
        await h.pay(invoice.id);
        await h.deliveriesIdle();
        const context = { secrets: [WEBHOOK_SECRET], toleranceSec: 300, now: h.clock.now() };
        const ids = h.webhooks.map(({ rawBody, headers }) => h.provider.verifyWebhook(rawBody, headers, context).event.eventId);
        expect(ids.length).toBe(2 * new Set(ids).size);
      });
    }
  });

  // Instead of the cases of a capability it lacks, the provider is held to what its target says.
  // Without webhooks at all, there are no deliveries to duplicate: the webhooks case above says so.
  const lacking = (Object.keys(byDesignCases) as (keyof typeof byDesignCases)[]).filter(
    (name) => isByDesign(target[name]) && !(name === 'duplicateDeliveries' && target.webhooks),
  );
  if (lacking.length > 0)
    describe('without, by design', () => {
      for (const name of lacking) byDesignCases[name]((target[name] as ByDesign).byDesign, start);
    });
}
