/**
 * What each real provider knows about its own webhooks, for a reader that is not a device (the
 * fleet relay): how to verify one on its raw bytes, which order it concerns, and, for a provider
 * whose events may name only an invoice, the read-only client that finds the invoice's reference.
 * The relay imports this table and nothing provider-specific, so adding a provider means a row here
 * (beside its adapter) and its name in the relay settings — nothing in the relay.
 */
import type { HttpClientDeps } from './http.js';
import type { PaymentProvider, VerifyContext, WebhookTarget } from './types.js';
import { createGeregeProvider, verifyGeregeWebhook, geregeWebhookTarget } from './gerege/index.js';
import { verifyQutpayWebhook, qutpayWebhookTarget } from './qutpay/index.js';

export interface ProviderWebhooks {
  /** Throws WebhookVerificationError; returns only when the signature holds on these bytes. */
  verify(rawBody: Buffer, headers: Record<string, string | string[] | undefined>, context: VerifyContext): unknown;
  /** Which order reference (or, when the body has none, which invoice) a verified body concerns. */
  target(body: unknown): WebhookTarget;
  /**
   * A client for `target`'s `invoice` answers (the relay reads the invoice's reference with it,
   * never moves money), built from the relay's read-only `routeLookup` key. Absent: every event of
   * this provider names its reference.
   */
  lookupClient?(deps: HttpClientDeps, key: RouteLookupKey): PaymentProvider;
}

/** The relay's read-only API key (settings `relay.routeLookup`). */
export interface RouteLookupKey {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  requestTimeoutMs: number;
}

export const PROVIDER_WEBHOOKS = {
  gerege: {
    verify: verifyGeregeWebhook,
    target: geregeWebhookTarget,
    lookupClient: (deps, key) => createGeregeProvider(deps, { ...key, createDeadlineMs: key.requestTimeoutMs * 2 }),
  },
  qutpay: { verify: verifyQutpayWebhook, target: qutpayWebhookTarget },
} as const satisfies Record<string, ProviderWebhooks>;

export type WebhookProviderName = keyof typeof PROVIDER_WEBHOOKS;

/** The webhook knowledge of `provider`, or undefined for a provider that has none here (the sandbox). */
export function providerWebhooks(provider: string): ProviderWebhooks | undefined {
  return Object.hasOwn(PROVIDER_WEBHOOKS, provider) ? PROVIDER_WEBHOOKS[provider as WebhookProviderName] : undefined;
}
