import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError, type VerifyContext } from '../types.js';

export const SANDBOX_SIGNATURE_HEADER = 'sandbox-signature';

/** `t=<unix>,v1=<hex>` with v1 = HMAC-SHA256(secret, "<t>.<raw body>"), the scheme Gerege uses. */
export function signSandboxPayload(rawBody: Buffer | string, secret: string, tSec: number): string {
  const mac = createHmac('sha256', secret).update(`${tSec}.`).update(rawBody).digest('hex');
  return `t=${tSec},v1=${mac}`;
}

/** Returns the index of the secret that matched. */
export function verifySandboxSignature(rawBody: Buffer, header: string | undefined, context: VerifyContext): number {
  if (context.secrets.length === 0) throw new WebhookVerificationError('no_secrets', 'no webhook secret is configured');
  if (!header) throw new WebhookVerificationError('missing_signature', `missing ${SANDBOX_SIGNATURE_HEADER} header`);
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  const signatures = parts.filter(([k]) => k === 'v1').map(([, v]) => v ?? '');
  if (!Number.isInteger(t) || signatures.length === 0)
    throw new WebhookVerificationError('bad_signature', 'signature header must be t=<unix>,v1=<hex>');
  if (Math.abs(context.now / 1000 - t) > context.toleranceSec) {
    throw new WebhookVerificationError(
      'stale_timestamp',
      `signature timestamp is ${Math.round(context.now / 1000 - t)} s off (tolerance ${context.toleranceSec} s): check the clock, or a replayed request`,
    );
  }
  for (const [index, secret] of context.secrets.entries()) {
    const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest('hex'));
    for (const candidate of signatures) {
      const given = Buffer.from(candidate);
      if (given.length === expected.length && timingSafeEqual(given, expected)) return index;
    }
  }
  throw new WebhookVerificationError(
    'bad_signature',
    'no signature matches any configured secret: was the body parsed or re-serialised before verification?',
  );
}
