import type { CanonicalStatus } from '../types.js';

/**
 * Gerege payment-intent statuses → canonical (docs/providers.md, "What the core sees").
 * `requires_payment` and `processing` are assumed names. `partially_refunded`/`refunded` are not in
 * the table but are mapped rather than degraded to `pending` should the intent ever carry them.
 */
export const GEREGE_STATUS_MAP: Readonly<Record<string, CanonicalStatus>> = Object.freeze({
  requires_payment: 'pending',
  claimed: 'pending',
  processing: 'pending',
  requires_capture: 'authorized',
  succeeded: 'paid',
  canceled: 'canceled',
  expired: 'expired',
  partially_refunded: 'partially_refunded',
  refunded: 'refunded',
});

/** The canonical status, or undefined for a word Gerege added after this code was written. */
export function mapGeregeStatus(word: string): CanonicalStatus | undefined {
  return Object.hasOwn(GEREGE_STATUS_MAP, word) ? GEREGE_STATUS_MAP[word] : undefined;
}

/** Gerege refund object statuses → RefundResult status. */
export function mapGeregeRefundStatus(word: string): 'succeeded' | 'pending' | 'failed' | undefined {
  return word === 'succeeded' || word === 'pending' || word === 'failed' ? word : undefined;
}
