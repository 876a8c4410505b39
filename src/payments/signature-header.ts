import { WebhookVerificationError } from './types.js';
import { readHeader } from './http.js';

/**
 * What every provider's webhook verification checks before any HMAC: the body is the raw request
 * bytes, a secret is configured, and the signature header is there. Answers that header's value;
 * `missing` is the sentence for a request without it (it names the provider's header).
 */
export function signatureHeader(
  rawBody: Buffer,
  headers: Record<string, string | string[] | undefined>,
  secrets: readonly string[],
  header: { name: string; missing: string },
): string {
  if (!Buffer.isBuffer(rawBody)) {
    throw new WebhookVerificationError(
      'malformed_body',
      'the body must be the raw request bytes (a Buffer): was the body parsed before verification?',
    );
  }
  if (secrets.length === 0) {
    throw new WebhookVerificationError('no_secrets', 'no webhook secret is configured: set VENDGATE_WEBHOOK_SECRETS');
  }
  const value = readHeader(headers, header.name);
  if (value === undefined || value.trim() === '') throw new WebhookVerificationError('missing_signature', header.missing);
  return value;
}
