/** Checks shared by the adapters, on the way out (the request) and on the way back (the invoice). */
import { ProviderError, type CreateInvoiceRequest, type Invoice } from './types.js';

/** Bad input is refused before any byte is sent: nothing is created. */
export function validateCreateRequest(request: CreateInvoiceRequest): void {
  const problems: string[] = [];
  if (request.idempotencyKey.length < 1 || request.idempotencyKey.length > 128) problems.push('idempotencyKey must be 1–128 characters');
  if (!Number.isSafeInteger(request.amount) || request.amount <= 0)
    problems.push('amount must be a positive integer in the smallest currency unit');
  if (request.reference.trim() === '') problems.push('reference must not be empty');
  if (!Number.isInteger(request.expiresInSec) || request.expiresInSec <= 0) problems.push('expiresInSec must be a positive integer');
  if (problems.length > 0) throw new ProviderError('rejected', `invalid create request: ${problems.join('; ')}`);
}

/**
 * A read of `requested` must answer with `requested`: an answer about another invoice is a faulty
 * answer (a proxy's cache, a provider bug), never a reading of that other invoice.
 */
export function expectInvoice(requested: string, invoice: Invoice, what: string): Invoice {
  if (invoice.id !== requested) throw new ProviderError('malformed', `${what}: asked for ${requested}, the answer is about ${invoice.id}`);
  return invoice;
}

/** Where an invoice stands on refunds: the canonical status a read of it shows, given its refunds. */
export function withRefunds(status: Invoice['status'], amount: number, refundedAmount: number): Invoice['status'] {
  if (refundedAmount <= 0 || (status !== 'paid' && status !== 'partially_refunded' && status !== 'refunded')) return status;
  return refundedAmount >= amount ? 'refunded' : 'partially_refunded';
}

/**
 * The fields of a returned invoice that differ from what was asked. Adapters return the provider's
 * values faithfully and log this; the core decides what a mismatch means (e.g. a QutPay replay of
 * an old key with another amount).
 */
export function findInvoiceMismatch(request: Pick<CreateInvoiceRequest, 'reference' | 'amount' | 'currency'>, invoice: Invoice): string[] {
  const mismatches: string[] = [];
  if (invoice.reference !== request.reference)
    mismatches.push(`reference ${JSON.stringify(invoice.reference)} ≠ ${JSON.stringify(request.reference)}`);
  if (invoice.amount !== request.amount) mismatches.push(`amount ${invoice.amount} ≠ ${request.amount}`);
  if (invoice.currency !== request.currency) mismatches.push(`currency ${invoice.currency} ≠ ${request.currency}`);
  return mismatches;
}
