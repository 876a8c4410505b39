import type { Logger } from '../util/logger.js';
import { ProviderError, type PaymentProvider, type WebhookTarget } from '../payments/index.js';
import type { RouteTable } from './routes.js';

/** Where a verified event goes: a device, nowhere known (2xx, counted), or "ask again later" (5xx). */
export type Location =
  { kind: 'device'; deviceId: string; reference: string } | { kind: 'unknown'; reason: string } | { kind: 'retry'; reason: string };

export interface LocatorDeps {
  routes: RouteTable;
  logger: Logger;
  /**
   * A client with a read-only key of the provider it names, for events whose body names only the
   * invoice (Gerege refunds `re_…`): the invoice's reference is read once and kept.
   */
  lookup: PaymentProvider | null;
  cacheSize: number;
}

/**
 * Finds the device of a verified event from its order reference. Which reference (or invoice) an
 * event concerns is the provider's knowledge (`payments/<provider>`, through `providerWebhooks`'s
 * `route`, which the server calls); this file knows only references and the route table. An invoice's reference never changes, so
 * a looked-up one is kept (bounded, oldest first out).
 */
export function createLocator(deps: LocatorDeps) {
  const log = deps.logger.child({ module: 'relay-locate' });
  const referenceOfInvoice = new Map<string, string>();
  let lookups = 0;

  function remember(invoiceId: string, reference: string): void {
    if (referenceOfInvoice.has(invoiceId)) return;
    referenceOfInvoice.set(invoiceId, reference);
    // Map keeps insertion order: the oldest entry goes first.
    if (referenceOfInvoice.size > deps.cacheSize) referenceOfInvoice.delete(referenceOfInvoice.keys().next().value!);
  }

  function at(reference: string): Location {
    const deviceId = deps.routes.find(reference);
    return deviceId ? { kind: 'device', deviceId, reference } : { kind: 'unknown', reason: 'no device announced this reference' };
  }

  async function byInvoice(provider: string, invoiceId: string): Promise<Location> {
    const cached = referenceOfInvoice.get(invoiceId);
    if (cached !== undefined) return at(cached);
    if (!deps.lookup || deps.lookup.name !== provider)
      return { kind: 'unknown', reason: 'event names only its invoice and no relay.routeLookup key is configured for this provider' };
    try {
      lookups += 1;
      const invoice = await deps.lookup.getInvoice(invoiceId);
      remember(invoiceId, invoice.reference);
      return at(invoice.reference);
    } catch (err) {
      if (err instanceof ProviderError && err.kind === 'not_found') return { kind: 'unknown', reason: 'invoice not found' };
      log.warn({ err, invoiceId }, 'invoice lookup failed: the provider will retry');
      return { kind: 'retry', reason: 'lookup_failed' };
    }
  }

  return {
    async locate(provider: string, target: WebhookTarget): Promise<Location> {
      if (target.kind === 'none') return { kind: 'unknown', reason: target.reason };
      if (target.kind === 'invoice') return byInvoice(provider, target.invoiceId);
      if (target.invoiceId !== null) remember(target.invoiceId, target.reference);
      return at(target.reference);
    },
    lookups: () => lookups,
    cached: () => referenceOfInvoice.size,
  };
}

export type Locator = ReturnType<typeof createLocator>;
