/**
 * `sender_invoice_no`: the merchant's own number of one create attempt (≤ 45 characters). Derived
 * from the attempt's idempotency key, which the core stores with the order before any call, so the
 * number is known on disk before QPay is asked and a new attempt (a new key) gets a new number.
 */
import { createHash } from 'node:crypto';

export const SENDER_INVOICE_NO_MAX = 45;

export function senderInvoiceNo(idempotencyKey: string): string {
  if (idempotencyKey.length <= SENDER_INVOICE_NO_MAX && /^[A-Za-z0-9_-]+$/.test(idempotencyKey)) return idempotencyKey;
  // Long device ids make long keys: a digest keeps the number unique per key and inside the limit.
  return `vg-${createHash('sha256').update(idempotencyKey, 'utf8').digest('hex').slice(0, 40)}`;
}
