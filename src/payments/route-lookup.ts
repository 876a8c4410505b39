/**
 * The fleet relay's read-only clients, by provider: for events that name only their invoice, the
 * relay reads the invoice's reference with one (it never moves money). Beside the webhook table
 * (webhooks.ts) and not in it, because a client is a whole adapter: the table is on every device's
 * money path, and a device loads only its own provider's adapter. A provider whose every event
 * names its reference has no row.
 */
import type { HttpClientDeps } from './http.js';
import type { PaymentProvider } from './types.js';
import { createGeregeProvider } from './gerege/adapter.js';

/** The relay's read-only API key (settings `relay.routeLookup`). */
export interface RouteLookupKey {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  requestTimeoutMs: number;
}

export const ROUTE_LOOKUP_CLIENTS: Readonly<Record<string, (deps: HttpClientDeps, key: RouteLookupKey) => PaymentProvider>> = {
  gerege: (deps, key) => createGeregeProvider(deps, { ...key, createDeadlineMs: key.requestTimeoutMs * 2 }),
};

/** The read-only client of `provider` built with `key`, or undefined when it has none. */
export function routeLookupClientOf(provider: string, deps: HttpClientDeps, key: RouteLookupKey): PaymentProvider | undefined {
  const build = Object.hasOwn(ROUTE_LOOKUP_CLIENTS, provider) ? ROUTE_LOOKUP_CLIENTS[provider] : undefined;
  return build?.(deps, key);
}
