/**
 * QutPay webhook signatures — pure. `X-Qutpay-Signature: sha256=<hex HMAC-SHA256 of the raw body>`.
 * There is no timestamp: replay protection is the `(invoice.id, status)` dedupe itself.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from '../types.js';
import { signatureHeader } from '../signature-header.js';

export const QUTPAY_SIGNATURE_HEADER = 'x-qutpay-signature';

export function verifyQutpaySignature(
  rawBody: Buffer,
  headers: Record<string, string | string[] | undefined>,
  options: { secrets: readonly string[] },
): { secretIndex: number } {
  const header = signatureHeader(rawBody, headers, options.secrets, {
    name: QUTPAY_SIGNATURE_HEADER,
    missing: 'no X-Qutpay-Signature header: is a proxy or the tunnel stripping headers, or is this request not from QutPay?',
  });
  // A repeated header arrives joined with commas; any well-formed value may match.
  const candidates = header
    .split(',')
    .map((part) => /^sha256=([0-9a-fA-F]{64})$/.exec(part.trim())?.[1])
    .filter((hex): hex is string => hex !== undefined)
    .map((hex) => Buffer.from(hex, 'hex'));
  if (candidates.length === 0) {
    throw new WebhookVerificationError('missing_signature', 'the X-Qutpay-Signature header is not "sha256=<64 hex digits>"');
  }
  for (const [secretIndex, secret] of options.secrets.entries()) {
    const expected = createHmac('sha256', secret).update(rawBody).digest();
    let matched = false;
    for (const candidate of candidates) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
    }
    if (matched) return { secretIndex };
  }
  throw new WebhookVerificationError(
    'bad_signature',
    `the signature matches none of the ${options.secrets.length} configured secret(s): was the body parsed or re-encoded before verification, or is the webhook secret wrong?`,
  );
}

/** The header value QutPay would send, for tests and the selftest. */
export function signQutpayTestPayload(rawBody: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(Buffer.from(rawBody)).digest('hex')}`;
}
