import type { PaymentProvider, WebhookEvent } from '../../payments/types.js';
import { WebhookVerificationError } from '../../payments/types.js';

export type Headers = Record<string, string | string[] | undefined>;

/**
 * Verifies through the provider contract (so a test double or a new adapter needs nothing here) and
 * says which secret matched, by index: during a rotation that tells the operator when the old
 * secret can be retired. Only with several secrets is the signature checked a second time, one
 * secret at a time, to find the index.
 */
export function verifyWithIndex(
  provider: PaymentProvider,
  rawBody: Buffer,
  headers: Headers,
  context: { secrets: readonly string[]; toleranceSec: number; now: number },
): { event: WebhookEvent; secretIndex: number } {
  const event = provider.verifyWebhook(rawBody, headers, context);
  if (context.secrets.length <= 1) return { event, secretIndex: 0 };
  for (const [index, secret] of context.secrets.entries()) {
    try {
      provider.verifyWebhook(rawBody, headers, { ...context, secrets: [secret] });
      return { event, secretIndex: index };
    } catch (err) {
      if (!(err instanceof WebhookVerificationError) || err.reason !== 'bad_signature') throw err;
    }
  }
  // Unreachable unless the provider is inconsistent; the event did verify against the full list.
  return { event, secretIndex: -1 };
}

/** Skew between the provider's `Date` header and our clock, in seconds; null without a usable header. */
export function dateSkewSec(headers: Headers, nowMs: number): number | null {
  const raw = headers.date;
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.round((nowMs - at) / 1000);
}
