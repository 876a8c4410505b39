import { describe, expect, it } from 'vitest';
import { isRecord } from '../../../src/payments/http.js';
import { mapQutpayStatus } from '../../../src/payments/adapters.js';
import { overSimulator, providerContract } from './provider-contract.js';
import { harnessPerTest, orderRequest, type Harness } from './provider-harness.js';

function invoiceOf(body: unknown): Record<string, unknown> | undefined {
  return isRecord(body) && isRecord(body.invoice) ? body.invoice : undefined;
}

describe('QutPay adapter against the simulator', () => {
  providerContract({
    ...overSimulator('qutpay', { createPath: /^\/api\/v1\/invoices$/, refundPath: /^\/api\/v1\/invoices\/[^/]+\/refund$/ }),
    unknownInvoiceId: 'inv_missing',
    statusAfterFullRefund: 'refunded',
    mapStatus: mapQutpayStatus,
    statusWordOf: (body) => {
      const status = invoiceOf(body)?.status;
      return typeof status === 'string' ? status : undefined;
    },
    expectedEventId: (body) => `${invoiceOf(body)!.id as string}:${invoiceOf(body)!.status as string}`,
  });

  describe('QutPay only', () => {
    const start = harnessPerTest('qutpay');

    it('refund_unknown / refund_pending_unknown are unknown outcomes with exactly one refund call each', async () => {
      const h = await start({ seed: 3 });
      for (let i = 0; i < 4; i += 1) {
        const invoice = await h.provider.createInvoice(orderRequest());
        await h.sim.pay(invoice.id);
        h.sim.setFaults({ refundUnknown: 1 });
        const result = await h.provider.refund({ invoiceId: invoice.id, amount: 1500, idempotencyKey: `${invoice.reference}-refund` });
        h.sim.setFaults({ refundUnknown: 0 });
        expect(result.status).toBe('unknown');
        expect(h.requestsTo(new RegExp(`^/api/v1/invoices/${invoice.id}/refund$`))).toHaveLength(1);
        // The core reads the invoice next: it says whether the money moved.
        const happened = h.records().refundUnknown.find((r) => r.invoiceId === invoice.id)!.happened;
        expect((await h.provider.getInvoice(invoice.id)).status).toBe(happened ? 'refunded' : 'paid');
      }
      expect(new Set(h.records().refundUnknown.map((r) => r.code))).toEqual(new Set(['refund_unknown', 'refund_pending_unknown']));
    });

    it('a reused key with another amount replays the first invoice: no second invoice, no retry', async () => {
      const h = await start();
      const request = orderRequest();
      const first = await h.provider.createInvoice(request);
      const replay = await h.provider.createInvoice({ ...request, amount: 9_000 });
      expect(replay).toMatchObject({ id: first.id, amount: 1500, replayed: true });
      expect(h.records().invoices).toHaveLength(1);
      expect(h.records().createCalls.map((c) => c.outcome)).toEqual(['created', 'replayed']);
    });

    it('a declined payment and a partial refund map to canceled and partially_refunded', async () => {
      const h = await start();
      const declined = await h.provider.createInvoice(orderRequest());
      h.sim.fail(declined.id);
      expect(await h.provider.getInvoice(declined.id)).toMatchObject({ status: 'canceled', providerStatus: 'failed' });
      const paid = await h.provider.createInvoice(orderRequest());
      await h.sim.pay(paid.id);
      await h.provider.refund({ invoiceId: paid.id, amount: 500, idempotencyKey: 'partial' });
      expect(await h.provider.getInvoice(paid.id)).toMatchObject({ status: 'partially_refunded' });
    });

    it('capture is refused: QutPay has no manual capture', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      await expect(h.provider.captureInvoice(invoice.id)).rejects.toMatchObject({ kind: 'rejected' });
    });
  });
});
