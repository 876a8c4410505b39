import type { CanonicalStatus } from '../types.js';

/** QutPay invoice statuses → canonical (docs/providers.md, "What the core sees"). */
export const QUTPAY_STATUS_MAP: Readonly<Record<string, CanonicalStatus>> = Object.freeze({
  new: 'pending',
  pending: 'pending',
  paid: 'paid',
  cancelled: 'canceled',
  failed: 'canceled',
  expired: 'expired',
  partially_refunded: 'partially_refunded',
  refunded: 'refunded',
});

/** The canonical status, or undefined for a word QutPay added after this code was written. */
export function mapQutpayStatus(word: string): CanonicalStatus | undefined {
  return Object.hasOwn(QUTPAY_STATUS_MAP, word) ? QUTPAY_STATUS_MAP[word] : undefined;
}

/**
 * QutPay refund statuses (not specified beyond `{ id, status }`): the words below are assumed;
 * anything else is reported as `unknown` so the core reads the invoice instead of guessing.
 */
export function mapQutpayRefundStatus(word: string): 'succeeded' | 'pending' | 'failed' | undefined {
  switch (word) {
    case 'succeeded':
    case 'success':
    case 'completed':
    case 'refunded':
      return 'succeeded';
    case 'pending':
    case 'processing':
    case 'new':
      return 'pending';
    case 'failed':
    case 'rejected':
    case 'declined':
      return 'failed';
    default:
      return undefined;
  }
}
