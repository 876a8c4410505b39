import { randomBytes } from 'node:crypto';
import {
  GEREGE_EVENT_ID_HEADER,
  GEREGE_SIGNATURE_HEADER,
  QUTPAY_SIGNATURE_HEADER,
  qpaySelftestReference,
  signGeregeTestPayload,
  signQutpayTestPayload,
  type ProviderName,
} from '../payments/index.js';
import { SANDBOX_SIGNATURE_HEADER, signSandboxPayload } from '../payments/sandbox/index.js';

/**
 * The event type of the tunnel round trip. The listener verifies and stores it like any event (so
 * the selftest can find it in `webhook_events`), and the inbox marks it processed at once: it is no
 * payment type, so nothing is re-read and no order is touched.
 */
export const SELFTEST_EVENT_TYPE = 'vendgate.selftest';

export interface SignedTestEvent {
  /** The inbox key the listener stores it under. */
  eventId: string;
  path: string;
  body: Buffer;
  headers: Record<string, string>;
}

/** A webhook signed exactly as the provider would sign it, with the device's own secret. */
export function signedTestEvent(
  provider: ProviderName,
  options: { secret: string; livemode: boolean; nowMs: number; nonce?: string },
): SignedTestEvent {
  const nonce = options.nonce ?? randomBytes(8).toString('hex');
  const nowSec = Math.floor(options.nowMs / 1000);
  const path = `/webhooks/${provider}`;
  switch (provider) {
    case 'gerege':
      return envelopeEvent({
        nonce,
        path,
        nowSec,
        livemode: options.livemode,
        object: { id: `st_selftest_${nonce}`, object: 'selftest' },
        headers: { eventId: GEREGE_EVENT_ID_HEADER, signature: GEREGE_SIGNATURE_HEADER },
        sign: (body) => signGeregeTestPayload(body, options.secret, nowSec),
      });
    case 'qutpay': {
      const invoiceId = `inv_selftest_${nonce}`;
      const body = Buffer.from(
        JSON.stringify({
          event: SELFTEST_EVENT_TYPE,
          created: new Date(options.nowMs).toISOString(),
          invoice: { id: invoiceId, status: 'selftest', livemode: options.livemode },
        }),
      );
      return {
        eventId: `${invoiceId}:selftest`,
        path,
        body,
        headers: { 'content-type': 'application/json', [QUTPAY_SIGNATURE_HEADER]: signQutpayTestPayload(body, options.secret) },
      };
    }
    case 'qpay': {
      // QPay callbacks are unsigned hints naming the order in the URL: the round trip proves the path,
      // and the reference carries a MAC under the client secret (`secret` here) so that nobody else can store one.
      const reference = qpaySelftestReference(nonce, options.secret);
      return {
        eventId: `qpay-selftest:${reference}`,
        path: `${path}?ref=${reference}`,
        body: Buffer.from('{}'),
        headers: { 'content-type': 'application/json' },
      };
    }
    case 'kaspi':
      // Kaspi QR sends no webhooks: the selftest proves its relay path with a signed ping instead.
      throw new Error('kaspi sends no webhooks: there is no test event to sign');
    case 'sandbox':
      return envelopeEvent({
        nonce,
        path,
        nowSec,
        livemode: false,
        object: { id: `st_selftest_${nonce}` },
        headers: { eventId: 'sandbox-event-id', signature: SANDBOX_SIGNATURE_HEADER },
        sign: (body) => signSandboxPayload(body, options.secret, nowSec),
      });
  }
}

/** An event in the envelope Gerege and the sandbox share (docs/providers.md, "Gerege"), signed by `sign`. */
function envelopeEvent(event: {
  nonce: string;
  path: string;
  nowSec: number;
  livemode: boolean;
  object: Record<string, unknown>;
  headers: { eventId: string; signature: string };
  sign: (body: Buffer) => string;
}): SignedTestEvent {
  const eventId = `evt_selftest_${event.nonce}`;
  const envelope = { id: eventId, object: 'event', type: SELFTEST_EVENT_TYPE, livemode: event.livemode, created: event.nowSec };
  const body = Buffer.from(JSON.stringify({ ...envelope, data: { object: event.object } }));
  return {
    eventId,
    path: event.path,
    body,
    headers: { 'content-type': 'application/json', [event.headers.eventId]: eventId, [event.headers.signature]: event.sign(body) },
  };
}
