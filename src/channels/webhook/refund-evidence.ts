/**
 * Refunds seen as events, wherever they were made. A Gerege refund is a `re_…` object: its intent stays
 * `succeeded` and carries no refunded amount (docs/providers.md), so a GET alone cannot tell that the
 * merchant refunded it in the dashboard. The `refund.succeeded` events the provider confirmed (read
 * from its Events API, or a webhook the Events API lists the same: refund-claims.ts) are in the inbox
 * with their refund id and amount; every reading of an invoice the money path makes goes through
 * `withRefundEvidence`, which adds them, so the ledger sees `refunded` or `partially_refunded` and
 * stops the vend (the rest of a partial refund goes back). While a claim about the invoice is still
 * being confirmed, a read of it answers "read again": nothing is decided on half the facts.
 */
import type { Db } from '../../store/index.js';
import { prepared } from '../../store/index.js';
import type { Invoice, PaymentProvider } from '../../payments/index.js';
import { ProviderError, withRefunds } from '../../payments/index.js';

/** The sum of the distinct succeeded refunds the provider confirmed for an invoice (0 when none). */
export function refundsSeenIn(db: Db): (invoiceId: string) => number {
  return (invoiceId) =>
    (
      prepared(
        db,
        `SELECT coalesce(sum(amount), 0) AS total FROM (
           SELECT refund_id, max(refund_amount) AS amount FROM webhook_events
            WHERE object_id = ? AND refund_id IS NOT NULL AND (source = 'backfill' OR refund_confirmed_at IS NOT NULL)
            GROUP BY refund_id)`,
      ).get(invoiceId) as { total: number }
    ).total;
}

/**
 * The provider, with every invoice it answers completed by the confirmed refunds seen as events.
 * `claimPending`: a refund claim about the invoice is still being confirmed, so a read of it is
 * answered "read again" (a `processing` ProviderError: every reader retries those).
 */
export function withRefundEvidence(
  provider: PaymentProvider,
  refundsSeen: (invoiceId: string) => number,
  claimPending: (invoiceId: string) => boolean = () => false,
): PaymentProvider {
  const complete = (invoice: Invoice): Invoice => {
    const seen = refundsSeen(invoice.id);
    const known = invoice.refundedAmount ?? 0;
    if (seen <= known) return invoice;
    const refundedAmount = Math.min(seen, invoice.amount);
    return { ...invoice, refundedAmount, status: withRefunds(invoice.status, invoice.amount, refundedAmount) };
  };
  return {
    ...provider,
    createInvoice: async (request) => complete(await provider.createInvoice(request)),
    getInvoice: async (invoiceId) => {
      const invoice = await provider.getInvoice(invoiceId);
      if (claimPending(invoiceId))
        throw new ProviderError('processing', 'a refund claim about this invoice is being confirmed with the provider: read again');
      return complete(invoice);
    },
    cancelInvoice: async (invoiceId) => complete(await provider.cancelInvoice(invoiceId)),
    captureInvoice: async (invoiceId) => complete(await provider.captureInvoice(invoiceId)),
  };
}

/**
 * Invoices the inbox has events about whose reference starts with `prefix` (this device's), received
 * since `sinceMs`: the orphan sweep's candidates (it skips those an order knows).
 */
export function referencedInvoicesIn(db: Db): (prefix: string, sinceMs: number) => { invoiceId: string; reference: string }[] {
  return (prefix, sinceMs) =>
    prepared(
      db,
      `SELECT object_id AS invoiceId, max(reference) AS reference FROM webhook_events
        WHERE reference IS NOT NULL AND substr(reference, 1, length(?)) = ? AND object_id IS NOT NULL AND received_at >= ?
        GROUP BY object_id ORDER BY min(rowid)`,
    ).all(prefix, prefix, sinceMs) as { invoiceId: string; reference: string }[];
}
