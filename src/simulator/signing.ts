import { createHmac } from 'node:crypto';

/**
 * The simulator's own signing, written from docs/providers.md and shared with nothing in payments/, so
 * that a signature bug cannot hide on both sides of the contract.
 */

/** Gerege: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`. */
export function signGeregeWebhook(secret: string, rawBody: string | Buffer, tSec: number): string {
  const t = Math.floor(tSec);
  const mac = createHmac('sha256', secret);
  mac.update(`${t}.`);
  mac.update(rawBody);
  return `t=${t},v1=${mac.digest('hex')}`;
}

/** QutPay: `sha256=<hex HMAC-SHA256(secret, raw body)>`. */
export function signQutpayWebhook(secret: string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}
