import { describe, expect, it } from 'vitest';
import { isRecord } from '../../../src/payments/http.js';
import { Writable } from 'node:stream';
import { createProvider } from '../../../src/payments/index.js';
import { mapQpayStatus } from '../../../src/payments/adapters.js';
import { parseSettings } from '../../../src/settings/index.js';
import { createLogger } from '../../../src/util/logger.js';
import { signedTestEvent } from '../../../src/selftest/test-event.js';
import { overSimulator, providerContract } from './provider-contract.js';
import { harnessPerTest, orderRequest, type Harness } from './provider-harness.js';

describe('QPay adapter against the simulator', () => {
  providerContract({
    ...overSimulator('qpay', { createPath: /^\/v2\/invoice$/, refundPath: /^\/v2\/payment\/refund\/[^/]+$/ }),
    unknownInvoiceId: '00000000-0000-4000-a000-000000000000',
    statusAfterFullRefund: 'refunded',
    mapStatus: mapQpayStatus,
    statusWordOf: (body) => (isRecord(body) && typeof body.status === 'string' ? body.status : undefined),
    expectedEventId: () => {
      throw new Error('QPay callbacks carry no event id: the signedWebhooks lack says what is checked instead');
    },
    partialRefunds: { byDesign: 'QPay returns a whole payment: DELETE /v2/payment/refund/{payment_id} carries no amount' },
    idempotentCreate: { byDesign: 'QPay does not document what a repeated sender_invoice_no gets, nor a read by it' },
    signedWebhooks: { byDesign: 'QPay calls the callback_url unsigned; only the ?ref= the device put in it names the order' },
  });

  describe('QPay only', () => {
    const start = harnessPerTest('qpay');

    it('in one process, a number whose create answer was lost is never sent again', async () => {
      const h = await start();
      const request = orderRequest();
      h.faultsForCalls(1, { lostResponse: 1 });
      await expect(h.provider.createInvoice(request)).rejects.toMatchObject({ kind: 'network' });
      await expect(h.provider.createInvoice(request)).rejects.toMatchObject({ kind: 'processing' });
      expect(h.requestsTo(/^\/v2\/invoice$/)).toHaveLength(1);
      expect(h.records().invoices).toHaveLength(1);
    });

    it.each([
      ['refuse', 'refused: the order fails and the next order gets a new number', 1],
      ['first', 'answered with the first invoice: that one is shown, none other exists', 1],
      ['create', 'a second invoice: only it is shown; the first was never shown, so nobody can pay it', 2],
    ] as const)('after a restart the same attempt asked again, QPay repeating a number %s — %s', async (mode, _what, invoicesAtQpay) => {
      const h = await start({ qpayDuplicateNumbers: mode });
      const request = orderRequest();
      h.faultsForCalls(1, { lostResponse: 1 });
      await expect(h.provider.createInvoice(request)).rejects.toMatchObject({ kind: 'network' });
      const lost = h.records().invoices[0]!.id;
      const answer = await (await h.restartedProvider()).createInvoice(request).catch((e: unknown) => e);
      expect(h.records().invoices).toHaveLength(invoicesAtQpay);
      if (mode === 'refuse') expect(answer).toMatchObject({ kind: 'rejected', message: expect.stringMatching(/DUPLICATED/) });
      if (mode === 'first') expect(answer).toMatchObject({ id: lost, status: 'pending' });
      if (mode === 'create') expect(answer).toMatchObject({ id: h.records().invoices[1]!.id, status: 'pending' });
    });

    it('an expired access token is renewed with the refresh token, and a revoked one by logging in again', async () => {
      const h = await start({ tokenTtlSec: 120 });
      const invoice = await h.provider.createInvoice(orderRequest());
      h.clock.advance(90_000);
      await h.provider.getInvoice(invoice.id);
      expect(h.requestsTo(/^\/v2\/auth\/refresh$/)).toHaveLength(1);
      h.sim.revokeTokens();
      await h.provider.getInvoice(invoice.id);
      expect(h.requestsTo(/^\/v2\/auth\/token$/)).toHaveLength(2);
      expect(h.requestsTo(/^\/v2\/invoice\//).filter((r) => r.status === 401)).toHaveLength(1);
    });

    it('a declined try leaves the invoice open and unpaid; a dashboard refund reads as refunded', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      h.sim.fail(invoice.id);
      expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'pending', providerStatus: 'OPEN' });
      await h.sim.pay(invoice.id);
      h.sim.refundOutside(invoice.id, 1500);
      expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'refunded', refundedAmount: 1500 });
      // Already returned: the refund reads that and sends nothing.
      const result = await h.provider.refund({ invoiceId: invoice.id, amount: 1500, idempotencyKey: 'r1' });
      expect(result.status).toBe('succeeded');
      expect(h.requestsTo(/^\/v2\/payment\/refund\//)).toHaveLength(0);
    });

    it('the QR is qr_text and the bank-app links come with the invoice', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      expect(invoice.payUrl).toContain(`/__sim/pay/${invoice.id}`);
      expect(invoice.appLinks?.map((l) => l.name)).toEqual(['Sim Bank', 'Sim Wallet']);
    });

    it('a callback for an order this process never made is refused and stored nowhere; the selftest callback needs the client secret', async () => {
      const h = await start();
      const context = { secrets: [], toleranceSec: 300, now: h.clock.now() };
      const hint = (query: string) => () => h.provider.verifyWebhook(Buffer.alloc(0), { 'x-vendgate-callback-query': query }, context);
      expect(hint('ref=someone-else-1')).toThrow(/made no invoice/);
      expect(hint('ref=a&ref=b')).toThrow(/once/);
      const good = signedTestEvent('qpay', { secret: 'contract-secret', livemode: false, nowMs: h.clock.now() });
      const query = good.path.split('?')[1]!;
      expect(hint(query)()).toMatchObject({ event: { eventId: good.eventId, type: 'vendgate.selftest', objectId: null }, secretIndex: 0 });
      const forged = signedTestEvent('qpay', { secret: 'not-the-secret', livemode: false, nowMs: h.clock.now() });
      expect(hint(forged.path.split('?')[1]!)).toThrow(/MAC/);
    });

    it('tokens never reach the log, whatever happens to them', async () => {
      const h = await start({ tokenTtlSec: 120 });
      const lines: string[] = [];
      const destination = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      });
      const settings = parseSettings({
        device: { id: 'vm-001', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Cola', price: 1500 }] },
        provider: {
          name: 'qpay',
          baseUrl: h.sim.url,
          clientId: 'contract-client',
          clientSecret: 'contract-secret',
          invoiceCode: 'SIM_INVOICE_CODE',
          callbackUrl: 'http://127.0.0.1:9/webhooks/qpay',
        },
      });
      const provider = await createProvider({ clock: h.clock, logger: createLogger({ level: 'debug', destination }) }, settings);
      const invoice = await provider.createInvoice(orderRequest({ currency: 'MNT' }));
      h.clock.advance(90_000);
      await provider.getInvoice(invoice.id);
      h.sim.revokeTokens();
      await provider.getInvoice(invoice.id);
      expect(lines.length).toBeGreaterThan(0);
      const text = lines.join('');
      expect(text).not.toMatch(/qat_|qrt_|contract-secret|Y29udHJhY3QtY2xpZW50/);
    });

    it('capture is refused: QPay has no manual capture', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      await expect(h.provider.captureInvoice(invoice.id)).rejects.toMatchObject({ kind: 'rejected' });
    });
  });
});
