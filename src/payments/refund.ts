import type { z } from 'zod';
import type { Logger } from '../util/logger.js';
import { parseWire, type HttpResponse } from './http.js';
import { ProviderError, type RefundRequest, type RefundResult } from './types.js';

/** Failures after which nobody can say whether the money moved: the request may have been carried out. */
const UNKNOWN_KINDS: readonly string[] = ['network', 'timeout', 'server', 'malformed', 'processing'];

export interface RefundWire {
  /** The provider's request: one attempt (`retry: 'none'`), the refund's own Idempotency-Key. */
  send: () => Promise<HttpResponse>;
  schema: z.ZodType<{ id: string; status: string }>;
  /** The provider's refund word → ours, or undefined for a word we do not know. */
  mapStatus: (word: string) => 'succeeded' | 'pending' | 'failed' | undefined;
  /** Error codes by which the provider itself says it cannot tell (QutPay's `refund_unknown`). */
  unknownCodes?: readonly string[];
  /** e.g. "gerege refund". */
  what: string;
}

/**
 * Sends a refund and reads the answer the way both providers need: a failure that leaves the outcome
 * open (no answer, 5xx, an unreadable 2xx, the provider's own "unknown") is `unknown` — never retried
 * blindly, the refund worker reads the invoice or asks again with the same key. A plain refusal (4xx)
 * throws, and the worker records it as failed.
 */
export async function sendRefund(log: Logger, request: RefundRequest, wire: RefundWire): Promise<RefundResult> {
  let response: HttpResponse;
  try {
    response = await wire.send();
  } catch (err) {
    const unknown = outcomeUnknown(err, wire.unknownCodes ?? []);
    if (unknown === undefined) throw err;
    log.warn({ invoiceId: request.invoiceId, detail: unknown }, 'refund outcome unknown, not retried');
    return { status: 'unknown', detail: unknown };
  }
  let refund;
  try {
    refund = parseWire(wire.schema, response.body, wire.what);
  } catch (err) {
    // A 2xx we cannot read: the money may well have moved.
    return { status: 'unknown', detail: (err as Error).message };
  }
  const status = wire.mapStatus(refund.status);
  return status ? { status, refundId: refund.id } : { status: 'unknown', refundId: refund.id, detail: `refund status ${refund.status}` };
}

function outcomeUnknown(err: unknown, unknownCodes: readonly string[]): string | undefined {
  if (!(err instanceof ProviderError)) return undefined;
  if (err.providerCode !== undefined && unknownCodes.includes(err.providerCode)) return err.message;
  if (UNKNOWN_KINDS.includes(err.kind)) return err.message;
  return undefined;
}
