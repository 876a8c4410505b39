import { describe, expect, it } from 'vitest';
import { harnessPerTest, orderRequest, startHarness } from './provider-harness.js';

describe('gerege: a refund whose answer was lost', () => {
  const start = harnessPerTest('gerege');

  /** A Gerege harness, a paid invoice on it, and the request that refunds all of it (its key: `<reference>-refund`). */
  async function paidInvoiceAndItsRefund() {
    const harness = await start();
    const invoice = await harness.provider.createInvoice(orderRequest());
    await harness.sim.pay(invoice.id);
    const request = { invoiceId: invoice.id, amount: invoice.amount, idempotencyKey: `${invoice.reference}-refund` };
    return { harness, invoice, request };
  }

  it('is confirmed by asking again with the same key, and the money moves once', async () => {
    const { harness, invoice, request } = await paidInvoiceAndItsRefund();

    // The provider commits the refund, then the connection drops before we hear the answer.
    harness.faultsForCalls(1, { lostResponse: 1 });
    expect((await harness.provider.refund(request)).status).toBe('unknown');
    // The intent stays succeeded after a refund (a refund is a `re_…` object, seen as its event): only
    // asking again with the same key tells which refund this was and whether ours went through.
    expect((await harness.provider.getInvoice(invoice.id)).status).toBe('paid');

    const confirmed = await harness.provider.confirmRefund!(request);
    expect(confirmed.status).toBe('succeeded');
    expect(harness.records().refunds.filter((r) => r.invoiceId === invoice.id)).toHaveLength(1);
  });

  it('sends the refund when the first attempt never reached the provider', async () => {
    const { harness, request } = await paidInvoiceAndItsRefund();
    harness.faultsForCalls(1, { serverError: 1 });
    expect((await harness.provider.refund(request)).status).toBe('unknown');
    expect(harness.records().refunds).toHaveLength(0);
    expect((await harness.provider.confirmRefund!(request)).status).toBe('succeeded');
    expect(harness.records().refunds).toHaveLength(1);
  });
});

describe('qutpay offers no way to ask a refund again', () => {
  it('has no confirmRefund: an unknown QutPay refund is settled by reading the invoice', async () => {
    const harness = await startHarness('qutpay');
    try {
      expect(harness.provider.confirmRefund).toBeUndefined();
    } finally {
      await harness.stop();
    }
  });
});
