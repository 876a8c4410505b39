import { WebhookVerificationError } from '../../payments/types.js';
import type { WebhookServerDeps } from './server.js';
import type { Headers } from './verify.js';

/** The listener's own dependencies, minus the HTTP-only ones: the two doors share one set of rules. */
export type BrokerIngestDeps = Pick<
  WebhookServerDeps,
  'provider' | 'inbox' | 'clock' | 'logger' | 'secrets' | 'toleranceSec' | 'onAccepted' | 'onDelivered'
>;

/** A webhook as the relay carried it: the provider's name, its headers and its exact bytes. */
export interface BrokerDelivery {
  provider: string;
  headers: Headers;
  rawBody: Buffer;
}

/**
 * Verifies and stores one carried webhook; resolves after the commit ('refused': the signature
 * failed and nothing was written). Throws when the database refused, so the message is redelivered.
 */
export type BrokerIngest = (delivery: BrokerDelivery) => Promise<'stored' | 'duplicate' | 'refused'>;

/**
 * Fleet mode: a webhook the relay carried over the broker enters the SAME inbox as one from the
 * tunnel, with the same dedupe (event id) and the same source ('webhook', so the silence detector and
 * the backfill treat both alike). The relay is not trusted with money: the signature is checked again
 * here on the raw bytes. Resolves after the commit — the MQTT side acknowledges only then — and
 * throws when the database refused, so the message is redelivered.
 */
export function createBrokerIngest(deps: BrokerIngestDeps): BrokerIngest {
  const log = deps.logger.child({ module: 'webhook', via: 'broker' });
  return async function ingest(delivery: BrokerDelivery): Promise<'stored' | 'duplicate' | 'refused'> {
    const now = deps.clock.now();
    let verified;
    try {
      verified = deps.provider.verifyWebhook(delivery.rawBody, delivery.headers, {
        secrets: deps.secrets,
        toleranceSec: deps.toleranceSec,
        now,
      });
    } catch (err) {
      // Redelivery cannot make a bad signature good: the caller acknowledges, and nothing is written.
      const reason = err instanceof WebhookVerificationError ? err.reason : 'unverifiable';
      log.warn({ reason }, 'broker webhook refused: verification failed');
      return 'refused';
    }
    const { event, secretIndex } = verified;
    const stored = await deps.inbox.addCommitted(event, delivery.rawBody, deps.provider.name, 'webhook', now);
    deps.onDelivered?.();
    if (stored.inserted && stored.handled) deps.onAccepted?.(event.eventId);
    if (stored.inserted)
      log[stored.handled ? 'info' : 'debug'](
        { eventId: event.eventId, type: event.type, objectId: event.objectId, secretIndex, handled: stored.handled },
        'webhook accepted',
      );
    else log.debug({ eventId: event.eventId, type: event.type }, 'duplicate webhook acknowledged');
    return stored.inserted ? 'stored' : 'duplicate';
  };
}
