/**
 * Kaspi QR's words → canonical statuses (docs/providers.md, "Kaspi QR"). `payment/status` says
 * whether a QR was paid; refunds are read from `payment/details` (what is still returnable). A word
 * not listed here is never read as money taken: it is `pending` and logged once.
 */
import type { CanonicalStatus } from '../types.js';

export const KASPI_STATUS_MAP: Readonly<Record<string, CanonicalStatus>> = Object.freeze({
  /** The QR exists; nobody scanned it yet. */
  QrTokenCreated: 'pending',
  /** Scanned: the customer is confirming in the app. Not money yet. */
  Wait: 'pending',
  /** Paid. */
  Processed: 'paid',
  /**
   * The QR is dead: its time ran out, or the customer's scan or confirmation failed (the test
   * emulator's scanerror / confirmerror). Kaspi does not say which, and no QR comes back from it
   * (assumed final): read as `expired` — close the order, never vend. A later Processed would still
   * be followed by the core as a late payment (refunded, never lost).
   */
  Error: 'expired',
  /** Cancelled by the merchant's remote/cancel. */
  RemotePaymentCanceled: 'canceled',
});

export function mapKaspiStatus(word: string): CanonicalStatus | undefined {
  return Object.hasOwn(KASPI_STATUS_MAP, word) ? KASPI_STATUS_MAP[word] : undefined;
}
