import type { Logger } from '../util/logger.js';
import { ProviderError, type PaymentProvider } from '../payments/index.js';
import type { RouteTable } from './routes.js';

/** Where a verified event goes: a device, nowhere known (2xx, counted), or "ask again later" (5xx). */
export type Location =
  { kind: 'device'; deviceId: string; reference: string } | { kind: 'unknown'; reason: string } | { kind: 'retry'; reason: string };

export interface LocatorDeps {
  routes: RouteTable;
  logger: Logger;
  /** A Gerege client with a read-only key, for refunds (`re_…`) whose body has no reference. */
  lookup: PaymentProvider | null;
  cacheSize: number;
}

/**
 * Finds the device of a verified event from its order reference: Gerege `data.object.reference`,
 * QutPay `invoice.externalOrderId`. A Gerege refund names only its payment intent: the intent's
 * reference is read once with the read-only key and kept (an intent's reference never changes).
 */
export function createLocator(deps: LocatorDeps) {
  const log = deps.logger.child({ module: 'relay-locate' });
  const referenceOfIntent = new Map<string, string>();
  let lookups = 0;

  function remember(intentId: string, reference: string): void {
    if (referenceOfIntent.has(intentId)) return;
    referenceOfIntent.set(intentId, reference);
    // Map keeps insertion order: the oldest entry goes first.
    if (referenceOfIntent.size > deps.cacheSize) referenceOfIntent.delete(referenceOfIntent.keys().next().value!);
  }

  function at(reference: string): Location {
    const deviceId = deps.routes.find(reference);
    return deviceId ? { kind: 'device', deviceId, reference } : { kind: 'unknown', reason: 'no device announced this reference' };
  }

  async function gerege(body: Record<string, any>): Promise<Location> {
    const object = body?.data?.object;
    if (!object || typeof object !== 'object') return { kind: 'unknown', reason: 'event without an object' };
    if (typeof object.id === 'string' && object.id.startsWith('pi_') && typeof object.reference === 'string') {
      remember(object.id, object.reference);
      return at(object.reference);
    }
    const intentId = typeof object.payment_intent === 'string' ? object.payment_intent : null;
    if (!intentId) return { kind: 'unknown', reason: 'no reference and no payment intent in the event' };
    const cached = referenceOfIntent.get(intentId);
    if (cached !== undefined) return at(cached);
    if (!deps.lookup) return { kind: 'unknown', reason: 'refund event and no relay.routeLookup key configured' };
    try {
      lookups += 1;
      const intent = await deps.lookup.getInvoice(intentId);
      remember(intentId, intent.reference);
      return at(intent.reference);
    } catch (err) {
      if (err instanceof ProviderError && err.kind === 'not_found') return { kind: 'unknown', reason: 'payment intent not found' };
      log.warn({ err, intentId }, 'payment intent lookup failed: the provider will retry');
      return { kind: 'retry', reason: 'lookup_failed' };
    }
  }

  return {
    async locate(provider: string, body: unknown): Promise<Location> {
      if (body === null || typeof body !== 'object') return { kind: 'unknown', reason: 'body is not an object' };
      const b = body as Record<string, any>;
      if (provider === 'gerege') return gerege(b);
      const reference = b.invoice?.externalOrderId;
      return typeof reference === 'string' ? at(reference) : { kind: 'unknown', reason: 'invoice without externalOrderId' };
    },
    lookups: () => lookups,
    cached: () => referenceOfIntent.size,
  };
}

export type Locator = ReturnType<typeof createLocator>;
