/**
 * QPay callbacks are not signed: anyone who learns the URL can call it. A callback is therefore only
 * a hint that the invoice of the order named in the URL's `?ref=` should be read now (payment/check);
 * nothing is decided from it. Pure.
 *
 * The listener (device or relay) hands the request's query string in CALLBACK_QUERY_HEADER (types.ts).
 */
import { CALLBACK_QUERY_HEADER, WebhookVerificationError, type WebhookEvent, type WebhookTarget } from '../types.js';
import { isRecord, readHeader } from '../http.js';

/** One stored hint per order per window: a flood of forged callbacks costs one read per window, no more. */
export const HINT_WINDOW_MS = 5_000;
/** The `?ref=` of the selftest's callback: no order reference starts so. */
export const QPAY_SELFTEST_PREFIX = 'vendgate-selftest-';
const REFERENCE = /^[A-Za-z0-9_.:-]{1,128}$/;

/** The callback URL the device gives QPay for one order. */
export function callbackUrlFor(base: string, reference: string): string {
  const url = new URL(base);
  url.searchParams.set('ref', reference);
  return url.toString();
}

/** The order reference a callback names, or a WebhookVerificationError naming what is wrong. */
export function readCallbackReference(headers: Record<string, string | string[] | undefined>): string {
  const query = readHeader(headers, CALLBACK_QUERY_HEADER);
  if (query === undefined) {
    throw new WebhookVerificationError('malformed_body', 'a QPay callback reached a listener that did not pass its query string');
  }
  const refs = new URLSearchParams(query).getAll('ref');
  if (refs.length !== 1 || !REFERENCE.test(refs[0]!)) {
    throw new WebhookVerificationError('malformed_body', 'a QPay callback names its order once in ?ref= (letters, digits, _.:-)');
  }
  return refs[0]!;
}

/**
 * The hint as an event. `objectId`: the invoice this device made for that order, when it knows it;
 * otherwise null and the hint is kept, not worked (the poller follows every open invoice anyway).
 */
export function qpayHintEvent(reference: string, invoiceId: string | null, nowMs: number): WebhookEvent {
  if (reference.startsWith(QPAY_SELFTEST_PREFIX)) {
    // `vendgate selftest`'s round trip through the tunnel or the relay: stored, never worked.
    return { eventId: `qpay-selftest:${reference}`, type: 'vendgate.selftest', objectId: null, livemode: null, createdAt: null };
  }
  return {
    eventId: `qpay-hint:${reference}:${Math.floor(nowMs / HINT_WINDOW_MS)}`,
    type: 'invoice.callback',
    objectId: invoiceId,
    livemode: null,
    createdAt: null,
    reference,
  };
}

/** For a reader that is not the device (the relay): the callback, as `{ ref }`. */
export function verifyQpayCallback(_rawBody: Buffer, headers: Record<string, string | string[] | undefined>): { ref: string } {
  return { ref: readCallbackReference(headers) };
}

/** Which order a callback concerns: the one its URL names. */
export function qpayCallbackTarget(body: unknown): WebhookTarget {
  if (isRecord(body) && typeof body.ref === 'string' && REFERENCE.test(body.ref)) {
    return { kind: 'reference', reference: body.ref, invoiceId: null };
  }
  return { kind: 'none', reason: 'callback without ?ref=' };
}
