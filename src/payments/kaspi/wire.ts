/**
 * Two wire formats (docs/providers.md, "Kaspi QR"), checked before use:
 *
 * - Kaspi's own (`/r3/v01/...`: `{ StatusCode, Message, Data }`), which the fleet relay reads;
 * - the relay's device API (`/kaspi/v1/...`), which the device adapter reads.
 *
 * Only the fields read are required; more pass through unread.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';

/** Kaspi answers HTTP 200 with `StatusCode` 0 for success and a negative code for a refusal. */
export const kaspiEnvelopeSchema = z.object({
  StatusCode: z.number().int(),
  Message: z.string().optional().nullable(),
  Data: z.unknown().optional(),
});
export type KaspiEnvelope = z.infer<typeof kaspiEnvelopeSchema>;

export const kaspiQrCreatedSchema = z.object({
  QrToken: z.string().min(1),
  ExpireDate: z.string().min(1),
  QrPaymentId: z.union([z.number().int().positive(), z.string().regex(/^\d{1,19}$/)]),
  PaymentMethods: z.array(z.string()).optional(),
  QrPaymentBehaviorOptions: z
    .object({
      StatusPollingInterval: z.number().positive().optional(),
      QrCodeScanWaitTimeout: z.number().positive().optional(),
      PaymentConfirmationTimeout: z.number().positive().optional(),
    })
    .optional(),
});
export type KaspiQrCreated = z.infer<typeof kaspiQrCreatedSchema>;

export const kaspiStatusSchema = z.object({ Status: z.string().min(1) });

export const kaspiDetailsSchema = z.object({
  QrPaymentId: z.union([z.number(), z.string()]).optional(),
  TotalAmount: z.number().nonnegative(),
  AvailableReturnAmount: z.number().nonnegative(),
  TransactionDate: z.string().optional(),
});
export type KaspiDetails = z.infer<typeof kaspiDetailsSchema>;

export const kaspiReturnSchema = z.object({ ReturnOperationId: z.union([z.number(), z.string()]) });

// --- the relay's device API ---------------------------------------------------------------------

export const relayQrSchema = z.object({
  qrPaymentId: z.string().regex(/^\d{1,19}$/),
  externalId: z.string().min(1),
  reference: z.string().min(1),
  amount: z.number().int().positive(),
  qrToken: z.string().min(1),
  /** Seconds the QR has left, by the relay's clock when it answered (no clocks compared). */
  expiresInSec: z.number().nonnegative(),
  pollIntervalSec: z.number().positive().optional(),
  livemode: z.boolean(),
  /** True when the relay answered from its journal (this ExternalId was created before). */
  replayed: z.boolean(),
});
export type RelayQr = z.infer<typeof relayQrSchema>;

export const relayPaymentSchema = z.object({
  qrPaymentId: z.string().regex(/^\d{1,19}$/),
  reference: z.string().min(1),
  /**
   * Once Processed: what Kaspi's payment/details say was paid (TotalAmount), which the core compares
   * with the order (a mismatch is refunded with an alarm, never vended). Before: the QR's own amount.
   */
  amount: z.number().int().nonnegative(),
  /** Kaspi's own word from payment/status. */
  status: z.string().min(1),
  /** Returned so far (TotalAmount − AvailableReturnAmount), once paid; 0 otherwise. */
  returnedAmount: z.number().int().nonnegative(),
  expiresInSec: z.number().nonnegative(),
  livemode: z.boolean(),
});
export type RelayPayment = z.infer<typeof relayPaymentSchema>;

export const relayReturnSchema = z.object({
  /** `unknown`: Kaspi's answer was lost; the relay never sends this return again. */
  outcome: z.enum(['succeeded', 'failed', 'unknown']),
  returnOperationId: z.string().optional(),
  returnedAmount: z.number().int().nonnegative().optional(),
  message: z.string().optional(),
});
export type RelayReturn = z.infer<typeof relayReturnSchema>;

export const relayPingSchema = z.object({ device: z.string().min(1), kaspi: z.string().min(1), livemode: z.boolean() });

/** Kaspi's `ExternalId` of one create attempt: the attempt's stored key, or its digest when long. */
export const EXTERNAL_ID_MAX = 45;
export function kaspiExternalId(idempotencyKey: string): string {
  if (idempotencyKey.length <= EXTERNAL_ID_MAX && /^[A-Za-z0-9_-]+$/.test(idempotencyKey)) return idempotencyKey;
  return `vg-${createHash('sha256').update(idempotencyKey, 'utf8').digest('hex').slice(0, 40)}`;
}

/** The relay's answer bodies for errors: `{ error: { code, message } }` (read by payments/http.ts). */
export const KASPI_RELAY_ERRORS = {
  /** Kaspi's answer to this ExternalId's create was lost: it is never sent again. */
  inDoubt: 'create_in_doubt',
  /** The same ExternalId is being sent right now. */
  inProgress: 'create_in_progress',
  /** Kaspi refused the call (StatusCode ≠ 0). */
  refused: 'kaspi_refused',
  /** Kaspi was not reached (connection, TLS handshake: nothing was sent). */
  unreachable: 'kaspi_unreachable',
  /** Kaspi answered 5xx, or not at all after the request left. */
  kaspiError: 'kaspi_error',
  /**
   * Kaspi's answer was about another QR than the one asked for, or said Processed while its details
   * show nothing paid: not read as this QR's, not paid (the poller reads again).
   */
  malformed: 'kaspi_malformed',
  /** Not this device's payment, or no such payment. */
  notFound: 'not_found',
  /** The device's signature was missing, stale or wrong. */
  unauthenticated: 'unauthenticated',
  invalid: 'invalid_request',
} as const;
