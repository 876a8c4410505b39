/**
 * Gerege webhook signatures — pure: bytes, headers, secrets and a time in; a verdict out.
 *
 *   Gerege-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]
 *   v1 = HMAC-SHA256(secret, "<t>.<raw body bytes>")
 *
 * Any v1 may match any configured secret (rotation); |now − t| must be within the tolerance.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from '../types.js';
import { signatureHeader } from '../signature-header.js';

export const GEREGE_SIGNATURE_HEADER = 'gerege-signature';
export const DEFAULT_TOLERANCE_SEC = 300;

export interface GeregeSignatureOptions {
  secrets: readonly string[];
  toleranceSec?: number;
  /** ms since epoch. */
  now: number;
}

export interface GeregeSignatureResult {
  /** Which of `secrets` signed it: tells the operator when the old secret can be retired. */
  secretIndex: number;
  timestampSec: number;
}

export function verifyGeregeSignature(
  rawBody: Buffer,
  headers: Record<string, string | string[] | undefined>,
  options: GeregeSignatureOptions,
): GeregeSignatureResult {
  const header = signatureHeader(rawBody, headers, options.secrets, {
    name: GEREGE_SIGNATURE_HEADER,
    missing: 'no Gerege-Signature header: is a proxy or the tunnel stripping headers, or is this request not from Gerege?',
  });
  const { timestampSec, signatures } = parseHeader(header);
  if (timestampSec === undefined || signatures.length === 0) {
    throw new WebhookVerificationError(
      'missing_signature',
      'the Gerege-Signature header has no t=<unix seconds> or no v1=<hex>: expected "t=…,v1=…"',
    );
  }

  const secretIndex = matchingSecret(rawBody, timestampSec, signatures, options.secrets);
  if (secretIndex < 0) {
    throw new WebhookVerificationError(
      'bad_signature',
      `no v1 signature matches any of the ${options.secrets.length} configured secret(s): was the body parsed or re-encoded before verification, or is the webhook secret wrong?`,
    );
  }
  const toleranceSec = options.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
  const skewSec = Math.abs(options.now / 1_000 - timestampSec);
  if (skewSec > toleranceSec) {
    throw new WebhookVerificationError(
      'stale_timestamp',
      `the signature timestamp is ${Math.round(skewSec)} s away from this device's clock (tolerance ${toleranceSec} s): is the clock synchronised (NTP), or is this an old request replayed?`,
    );
  }
  return { secretIndex, timestampSec };
}

/** The header value Gerege would send, for tests, the simulator's counterpart checks and the selftest. */
export function signGeregeTestPayload(rawBody: Buffer | string, secret: string, tSec: number): string {
  return `t=${tSec},v1=${hmacHex(secret, tSec, Buffer.from(rawBody))}`;
}

function parseHeader(header: string): { timestampSec: number | undefined; signatures: Buffer[] } {
  let timestampSec: number | undefined;
  const signatures: Buffer[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestampSec = Number(value);
    // Only well-formed SHA-256 hex: anything else can never match, and Buffer.from would drop bad digits silently.
    if (key === 'v1' && /^[0-9a-fA-F]{64}$/.test(value)) signatures.push(Buffer.from(value, 'hex'));
  }
  return { timestampSec, signatures };
}

function matchingSecret(rawBody: Buffer, timestampSec: number, signatures: Buffer[], secrets: readonly string[]): number {
  for (const [index, secret] of secrets.entries()) {
    const expected = Buffer.from(hmacHex(secret, timestampSec, rawBody), 'hex');
    // Every candidate is compared (no early exit inside one secret) in constant time on equal lengths.
    let matched = false;
    for (const candidate of signatures) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
    }
    if (matched) return index;
  }
  return -1;
}

function hmacHex(secret: string, timestampSec: number, rawBody: Buffer): string {
  return createHmac('sha256', secret).update(`${timestampSec}.`).update(rawBody).digest('hex');
}
