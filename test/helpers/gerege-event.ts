import { signGeregeTestPayload } from '../../src/payments/adapters.js';

/**
 * A Gerege event as the provider delivers it: the compact JSON body, created now, and the headers
 * that name the event and sign the body with `secret`.
 */
export function signedGeregeEvent(
  secret: string,
  id: string,
  object: Record<string, unknown>,
  type = 'payment_intent.succeeded',
): { body: string; headers: Record<string, string> } {
  const created = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ id, object: 'event', type, livemode: false, created, data: { object } });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'gerege-event-id': id,
      'gerege-signature': signGeregeTestPayload(body, secret, created),
    },
  };
}
