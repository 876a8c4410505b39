/**
 * QPay callbacks are not signed: anyone who learns the URL can call it. A callback is therefore only
 * a hint that the invoice of the order named in the URL's `?ref=` should be read now (payment/check);
 * nothing is decided from it. Pure.
 *
 * The listener (device or relay) hands the request's query string in CALLBACK_QUERY_HEADER (types.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
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
  const [ref, ...more] = new URLSearchParams(query).getAll('ref');
  if (ref === undefined || more.length > 0 || !REFERENCE.test(ref)) {
    throw new WebhookVerificationError('malformed_body', 'a QPay callback names its order once in ?ref= (letters, digits, _.:-)');
  }
  return ref;
}

/**
 * The hint as an event. `objectId`: the invoice this device made for that order, when it knows it;
 * otherwise null and the hint is kept, not worked (the poller follows every open invoice anyway).
 */
export function qpayHintEvent(reference: string, invoiceId: string, nowMs: number): WebhookEvent {
  const window = Math.floor(nowMs / HINT_WINDOW_MS);
  const inWindow = (w: number): WebhookEvent => ({
    eventId: `qpay-hint:${reference}:${w}`,
    type: 'invoice.callback',
    objectId: invoiceId,
    livemode: null,
    createdAt: null,
    reference,
  });
  // This window's hint already worked (perhaps a forged one, before the payment): the next window's,
  // due when it opens. Nothing makes that one due earlier, so it is never worked within this window.
  return { ...inWindow(window), later: { event: inWindow(window + 1), notBefore: (window + 1) * HINT_WINDOW_MS } };
}

/**
 * The hint a device keeps, or a refusal. Nothing is stored for a reference this process made no
 * invoice for: otherwise anyone could fill the inbox with made-up references. The selftest's own
 * callback carries a MAC under the client secret (the only secret QPay gives) and is stored, never worked.
 */
export function deviceHint(reference: string, invoiceId: string | null, nowMs: number, clientSecret: string): WebhookEvent {
  if (reference.startsWith(QPAY_SELFTEST_PREFIX)) {
    if (!selftestReferenceHolds(reference, clientSecret))
      throw new WebhookVerificationError('bad_signature', 'a selftest callback whose MAC does not match the client secret');
    return { eventId: `qpay-selftest:${reference}`, type: 'vendgate.selftest', objectId: null, livemode: null, createdAt: null };
  }
  if (invoiceId === null) {
    throw new WebhookVerificationError(
      'bad_signature',
      'a QPay callback for an order this process made no invoice for (another device, a made-up reference, or before a restart): not stored; polling follows every open invoice',
    );
  }
  return qpayHintEvent(reference, invoiceId, nowMs);
}

/** `vendgate-selftest-<nonce>-<16 hex of HMAC-SHA256(clientSecret, nonce)>`. */
export function qpaySelftestReference(nonce: string, clientSecret: string): string {
  return `${QPAY_SELFTEST_PREFIX}${nonce}-${selftestMac(nonce, clientSecret)}`;
}

function selftestMac(nonce: string, clientSecret: string): string {
  return createHmac('sha256', clientSecret).update(`qpay-selftest:${nonce}`).digest('hex').slice(0, 16);
}

function selftestReferenceHolds(reference: string, clientSecret: string): boolean {
  const [, nonce, mac] = /^vendgate-selftest-([0-9a-f]{8,32})-([0-9a-f]{16})$/.exec(reference) ?? [];
  if (nonce === undefined || mac === undefined || clientSecret === '') return false;
  const expected = Buffer.from(selftestMac(nonce, clientSecret));
  const given = Buffer.from(mac);
  return expected.length === given.length && timingSafeEqual(expected, given);
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
