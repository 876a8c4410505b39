/**
 * Gerege events: turning a verified body (webhook) or an Events API item into a WebhookEvent.
 * Pure, like the signature module.
 */
import { WebhookVerificationError, type VerifyContext, type WebhookEvent, type WebhookTarget } from '../types.js';
import { isRecord, readHeader } from '../http.js';
import { verifyGeregeSignature } from './signature.js';

export const GEREGE_EVENT_ID_HEADER = 'gerege-event-id';

/** Verifies the signature on the raw bytes, then parses. Also says which secret matched. */
export function verifyGeregeWebhook(
  rawBody: Buffer,
  headers: Record<string, string | string[] | undefined>,
  context: VerifyContext,
): { event: WebhookEvent; secretIndex: number } {
  const { secretIndex } = verifyGeregeSignature(rawBody, headers, context);
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('malformed_body', 'the signed body is not JSON');
  }
  const event = parseGeregeEvent(body);
  if (event === undefined) {
    throw new WebhookVerificationError(
      'malformed_body',
      'the signed body is not a Gerege event: expected { id: "evt_…", type, data: { object } }',
    );
  }
  const headerId = readHeader(headers, GEREGE_EVENT_ID_HEADER);
  if (headerId !== undefined && headerId !== event.eventId) {
    throw new WebhookVerificationError(
      'malformed_body',
      `the Gerege-Event-Id header (${headerId}) differs from the body id (${event.eventId})`,
    );
  }
  return { event, secretIndex };
}

/**
 * An event body → WebhookEvent; undefined when it lacks the id or type. The object id is the
 * payment intent: `data.object.id` for `pi_…`, `data.object.payment_intent` for a refund `re_…`.
 */
export function parseGeregeEvent(body: unknown): WebhookEvent | undefined {
  if (!isRecord(body) || typeof body.id !== 'string' || body.id === '' || typeof body.type !== 'string') return undefined;
  const object = isRecord(body.data) && isRecord(body.data.object) ? body.data.object : undefined;
  const refund = object ? succeededRefundOf(object) : undefined;
  return {
    eventId: body.id,
    type: body.type,
    objectId: object ? intentIdOf(object) : null,
    livemode: typeof body.livemode === 'boolean' ? body.livemode : null,
    createdAt: typeof body.created === 'number' && Number.isFinite(body.created) ? body.created * 1_000 : null,
    ...(refund ? { refund } : {}),
    ...(object && typeof object.reference === 'string' && object.reference !== '' ? { reference: object.reference } : {}),
  };
}

/** A `re_…` object of status `succeeded` with a positive integer amount (docs/providers.md), else undefined. */
function succeededRefundOf(object: Record<string, unknown>): { id: string; amount: number } | undefined {
  const { id, amount, status } = object;
  if (typeof id !== 'string' || !id.startsWith('re_') || status !== 'succeeded') return undefined;
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount <= 0) return undefined;
  if (intentIdOf(object) === null) return undefined;
  return { id, amount };
}

function intentIdOf(object: Record<string, unknown>): string | null {
  const id = typeof object.id === 'string' ? object.id : '';
  if (id.startsWith('pi_')) return id;
  if (id.startsWith('re_') && typeof object.payment_intent === 'string' && object.payment_intent.startsWith('pi_'))
    return object.payment_intent;
  return null;
}

/**
 * The order a verified Gerege event concerns: a payment intent (`pi_…`) carries the order reference;
 * a refund (`re_…`) names only its payment intent, whose reference must be read.
 */
export function geregeWebhookTarget(body: unknown): WebhookTarget {
  const object = isRecord(body) && isRecord(body.data) && isRecord(body.data.object) ? body.data.object : undefined;
  if (!object) return { kind: 'none', reason: 'event without an object' };
  if (typeof object.id === 'string' && object.id.startsWith('pi_') && typeof object.reference === 'string' && object.reference !== '')
    return { kind: 'reference', reference: object.reference, invoiceId: object.id };
  const intentId = intentIdOf(object);
  if (intentId) return { kind: 'invoice', invoiceId: intentId };
  return { kind: 'none', reason: 'no reference and no payment intent in the event' };
}
