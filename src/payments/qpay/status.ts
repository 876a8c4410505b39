/**
 * QPay's words → canonical statuses (docs/providers.md, "QPay"). Money is decided from the payment
 * rows of `payment/check`; the invoice's own status only says whether an unpaid invoice is still
 * open. A word not listed here is never read as money taken.
 */
import type { CanonicalStatus } from '../types.js';

/** `payment_status` of a payment row. NEW and FAILED took no money. */
export const QPAY_PAYMENT_STATUS_MAP: Readonly<Record<string, CanonicalStatus>> = Object.freeze({
  NEW: 'pending',
  FAILED: 'pending',
  PAID: 'paid',
  PARTIAL: 'partially_refunded',
  REFUNDED: 'refunded',
});

/** `invoice_status` of an invoice no payment row says was paid. */
export const QPAY_INVOICE_STATUS_MAP: Readonly<Record<string, CanonicalStatus>> = Object.freeze({
  OPEN: 'pending',
  NEW: 'pending',
  PAID: 'pending',
  CANCELED: 'canceled',
  CANCELLED: 'canceled',
  DELETED: 'canceled',
  EXPIRED: 'expired',
});

/** The canonical status of a payment row, or undefined for a word QPay added after this code. */
export function mapQpayPaymentStatus(word: string): CanonicalStatus | undefined {
  return Object.hasOwn(QPAY_PAYMENT_STATUS_MAP, word) ? QPAY_PAYMENT_STATUS_MAP[word] : undefined;
}

/** The canonical status of an unpaid invoice's own word, or undefined for an unknown word. */
export function mapQpayInvoiceStatus(word: string): CanonicalStatus | undefined {
  return Object.hasOwn(QPAY_INVOICE_STATUS_MAP, word) ? QPAY_INVOICE_STATUS_MAP[word] : undefined;
}

/** Either table: for the contract's check that every word the provider shows is known. */
export function mapQpayStatus(word: string): CanonicalStatus | undefined {
  return mapQpayPaymentStatus(word) ?? mapQpayInvoiceStatus(word);
}
