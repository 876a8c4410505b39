import { describe, expect, it } from 'vitest';
import { isRecord } from '../../../src/payments/http.js';
import { mapKaspiStatus } from '../../../src/payments/adapters.js';
import { overSimulator, providerContract } from './provider-contract.js';
import { harnessPerTest, orderRequest, type Harness } from './provider-harness.js';

describe('Kaspi QR adapter through the fleet relay against the simulator', () => {
  providerContract({
    ...overSimulator('kaspi', { createPath: /^\/r3\/v01\/qr\/create$/, refundPath: /^\/r3\/v01\/payment\/return$/ }),
    unknownInvoiceId: '999999999',
    statusAfterFullRefund: 'refunded',
    mapStatus: mapKaspiStatus,
    statusWordOf: (body) => (isRecord(body) && typeof body.Status === 'string' ? body.Status : undefined),
    expectedEventId: () => {
      throw new Error('Kaspi QR sends no webhooks');
    },
    anotherAmountPaid: { byDesign: 'a Kaspi QR carries its amount: the wallet pays exactly that' },
    duplicateDeliveries: { byDesign: 'Kaspi QR sends no webhooks' },
    idempotentCreate: {
      byDesign: "Kaspi does not document what a repeated ExternalId gets, nor a read by it: the relay's journal never sends one twice",
    },
    webhooks: { byDesign: 'Kaspi QR payments are polled; Kaspi calls nobody' },
  });

  describe('Kaspi only', () => {
    const start = harnessPerTest('kaspi');

    it.each(['create', 'refuse'] as const)(
      'after a restart the same attempt asked again is answered from the relay journal, whatever Kaspi does with a repeated ExternalId (%s)',
      async (mode) => {
        const h = await start({ kaspiDuplicateExternalIds: mode });
        const request = orderRequest();
        const first = await h.provider.createInvoice(request);
        const again = await (await h.restartedProvider()).createInvoice(request);
        expect(again).toMatchObject({ id: first.id, replayed: true, payUrl: first.payUrl, status: 'pending' });
        expect(h.requestsTo(/^\/r3\/v01\/qr\/create$/)).toHaveLength(1);
      },
    );

    it('a QR Kaspi answered whose answer the device lost is shown again, paid or not, and never created twice', async () => {
      const h = await start();
      const request = orderRequest();
      const first = await h.provider.createInvoice(request);
      await h.pay(first.id);
      // The device lost power before it stored the answer: the same attempt asks again.
      const again = await (await h.restartedProvider()).createInvoice(request);
      expect(again).toMatchObject({ id: first.id, status: 'paid', replayed: true });
      expect(h.records().invoices).toHaveLength(1);
    });

    it('the test emulator flows: scanned is still not paid, a scan or confirm error closes the QR, confirm is paid', async () => {
      const h = await start();
      const a = await h.provider.createInvoice(orderRequest());
      const view = h.sim.info().url;
      expect(view).toMatch(/^http/);
      const emulate = (action: string, id: string) =>
        fetch(`${h.sim.url}/r3/v01/test/payment/${action}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'api-key': h.sim.info().kaspi!.apiKey! },
          body: JSON.stringify({ QrPaymentId: Number(id) }),
        }).then((r) => r.json());
      expect(await emulate('scan', a.id)).toMatchObject({ StatusCode: 0 });
      expect(await h.provider.getInvoice(a.id)).toMatchObject({ status: 'pending', providerStatus: 'Wait' });
      expect(await emulate('confirm', a.id)).toMatchObject({ StatusCode: 0 });
      expect(await h.provider.getInvoice(a.id)).toMatchObject({ status: 'paid', providerStatus: 'Processed' });
      const b = await h.provider.createInvoice(orderRequest());
      await emulate('scanerror', b.id);
      expect(await h.provider.getInvoice(b.id)).toMatchObject({ status: 'expired', providerStatus: 'Error' });
      const c = await h.provider.createInvoice(orderRequest());
      await emulate('scan', c.id);
      await emulate('confirmerror', c.id);
      expect(await h.provider.getInvoice(c.id)).toMatchObject({ status: 'expired', providerStatus: 'Error' });
      // A closed QR cannot be paid afterwards.
      expect(await emulate('confirm', c.id)).toMatchObject({ StatusCode: expect.any(Number) });
      expect((await h.provider.getInvoice(c.id)).status).toBe('expired');
    });

    it('two partial returns then the rest: each moves its part once; more than is left is refused and moves nothing', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      await h.pay(invoice.id);
      expect(await h.provider.refund({ invoiceId: invoice.id, amount: 500, idempotencyKey: 'r-1' })).toMatchObject({ status: 'succeeded' });
      expect(await h.provider.refund({ invoiceId: invoice.id, amount: 500, idempotencyKey: 'r-2' })).toMatchObject({ status: 'succeeded' });
      expect(await h.provider.refund({ invoiceId: invoice.id, amount: 1000, idempotencyKey: 'r-3' })).toMatchObject({ status: 'failed' });
      expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: 1000 });
      // The same key again is answered from the journal: Kaspi is not asked twice.
      expect(await h.provider.refund({ invoiceId: invoice.id, amount: 500, idempotencyKey: 'r-1' })).toMatchObject({ status: 'succeeded' });
      expect(h.requestsTo(/^\/r3\/v01\/payment\/return$/)).toHaveLength(3);
      expect(h.records().refunds.map((r) => r.amount)).toEqual([500, 500]);
    });

    it('a return whose answer was lost is never sent again: asking again says unknown, and the read says whether money moved', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      await h.pay(invoice.id);
      h.faultsForCalls(1, { lostResponse: 1 });
      const request = { invoiceId: invoice.id, amount: 1500, idempotencyKey: 'r-lost' };
      expect(await h.provider.refund(request)).toMatchObject({ status: 'unknown' });
      expect(await h.provider.refund(request)).toMatchObject({ status: 'unknown' });
      expect(h.requestsTo(/^\/r3\/v01\/payment\/return$/)).toHaveLength(1);
      expect(await h.provider.getInvoice(invoice.id)).toMatchObject({ status: 'refunded', refundedAmount: 1500 });
    });

    it('an unknown status word is read as not paid', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      expect(mapKaspiStatus('SomethingNew')).toBeUndefined();
      expect((await h.provider.getInvoice(invoice.id)).status).toBe('pending');
    });

    it('capture is refused: Kaspi QR has no manual capture', async () => {
      const h = await start();
      const invoice = await h.provider.createInvoice(orderRequest());
      await expect(h.provider.captureInvoice(invoice.id)).rejects.toMatchObject({ kind: 'rejected' });
    });
  });
});
