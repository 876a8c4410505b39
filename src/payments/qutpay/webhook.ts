/** QutPay webhook bodies → WebhookEvent. Pure. */
import { WebhookVerificationError, type VerifyContext, type WebhookEvent, type WebhookTarget } from '../types.js';
import { isRecord } from '../http.js';
import { verifyQutpaySignature } from './signature.js';

/** Verifies the signature on the raw bytes, then parses. Also says which secret matched. */
export function verifyQutpayWebhook(
  rawBody: Buffer,
  headers: Record<string, string | string[] | undefined>,
  context: Pick<VerifyContext, 'secrets'>,
): { event: WebhookEvent; secretIndex: number } {
  const { secretIndex } = verifyQutpaySignature(rawBody, headers, context);
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('malformed_body', 'the signed body is not JSON');
  }
  const event = parseQutpayEvent(body);
  if (!event) {
    throw new WebhookVerificationError(
      'malformed_body',
      'the signed body is not a QutPay event: expected { event, invoice: { id, status } }',
    );
  }
  return { event, secretIndex };
}

/** One invoice legitimately passes through several statuses, each handled once: the id is `<invoice.id>:<status>`. */
export function parseQutpayEvent(body: unknown): WebhookEvent | undefined {
  if (!isRecord(body) || !isRecord(body.invoice)) return undefined;
  const { id, status, livemode, externalOrderId } = body.invoice;
  if (typeof id !== 'string' || id === '' || typeof status !== 'string' || status === '') return undefined;
  const created = body.created ?? body.createdAt;
  return {
    eventId: `${id}:${status}`,
    type: typeof body.event === 'string' ? body.event : `invoice.${status}`,
    objectId: id,
    livemode: typeof livemode === 'boolean' ? livemode : null,
    createdAt: typeof created === 'string' && !Number.isNaN(Date.parse(created)) ? Date.parse(created) : null,
    ...(typeof externalOrderId === 'string' && externalOrderId !== '' ? { reference: externalOrderId } : {}),
  };
}

/** The order a verified QutPay event concerns: every event carries the invoice with its `externalOrderId`. */
export function qutpayWebhookTarget(body: unknown): WebhookTarget {
  const invoice = isRecord(body) && isRecord(body.invoice) ? body.invoice : undefined;
  if (!invoice) return { kind: 'none', reason: 'event without an invoice' };
  if (typeof invoice.externalOrderId === 'string' && invoice.externalOrderId !== '')
    return { kind: 'reference', reference: invoice.externalOrderId, invoiceId: typeof invoice.id === 'string' ? invoice.id : null };
  return { kind: 'none', reason: 'invoice without externalOrderId' };
}
