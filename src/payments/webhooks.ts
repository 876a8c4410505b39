/**
 * What each real provider knows about its own webhooks: the one place that names a provider's
 * webhook headers. Everything else derives from this table: the headers the fleet relay forwards
 * to a device (`forwardedWebhookHeaders`), the headers no log line may show (`secretWebhookHeaders`,
 * registered with the logger below), the selftest's test event and hints, the device listener's
 * routes, and the relay's verify → route. Adding a provider means a row here (beside its adapter)
 * and its name in the relay settings — nothing in the relay (and, when its events may name only an
 * invoice, a read-only client in route-lookup.ts). A provider without webhooks (polling
 * only) has no row: the relay serves no route for it and forwards nothing.
 */
import { CALLBACK_QUERY_HEADER, type VerifyContext, type WebhookTarget } from './types.js';
import { registerSecretHeaders } from '../util/logger.js';
// The verifiers only (HMAC and a JSON shape check): not the adapters, which a device loads only
// for its own provider (createProvider), nor their wire schemas.
import { verifyGeregeWebhook, geregeWebhookTarget, GEREGE_EVENT_ID_HEADER } from './gerege/webhook.js';
import { GEREGE_SIGNATURE_HEADER } from './gerege/signature.js';
import { verifyQutpayWebhook, qutpayWebhookTarget } from './qutpay/webhook.js';
import { QUTPAY_SIGNATURE_HEADER } from './qutpay/signature.js';
import { verifyQpayCallback, qpayCallbackTarget } from './qpay/callback.js';

type Headers = Record<string, string | string[] | undefined>;

export interface ProviderWebhooks {
  /**
   * The request headers this provider's verifier reads, lower case. The fleet relay forwards these
   * (and `WEBHOOK_COMMON_HEADERS`) to the device, nothing else.
   */
  headers: readonly string[];
  /** Those of `headers` that carry a signature or a MAC: never in a log line. */
  secretHeaders: readonly string[];
  /**
   * False: its callbacks carry no signature (QPay). No webhook secret is asked for, and a callback
   * is a hint that causes a read, never a decision.
   */
  signed: boolean;
  /**
   * True: the callback names its order only in its URL's query, and its method and body are not
   * documented. A listener (device or relay) then serves GET and any body too, and hands the query
   * to `verify` in CALLBACK_QUERY_HEADER, overwriting any header of that name the caller sent.
   */
  orderInQuery: boolean;
  /** Throws WebhookVerificationError; returns only when the signature holds on these bytes. */
  verify(rawBody: Buffer, headers: Headers, context: VerifyContext): unknown;
  /** Which order reference (or, when the body has none, which invoice) a verified JSON body concerns. */
  target(body: unknown): WebhookTarget;
  /**
   * Verifies (throws WebhookVerificationError) and says which order the request concerns: what the
   * relay routes by. The headers are the listener's, with CALLBACK_QUERY_HEADER set.
   */
  route(rawBody: Buffer, headers: Headers, context: VerifyContext): WebhookTarget;
}

/** Read by every listener whatever the provider: the body's type, and `date` for the clock-skew warning. */
export const WEBHOOK_COMMON_HEADERS = ['content-type', 'date'] as const;

/** Verify, then the target of the body the signature covers (a verified body is JSON). */
function verifiedJson(verify: ProviderWebhooks['verify'], target: ProviderWebhooks['target']): ProviderWebhooks['route'] {
  return (rawBody, headers, context) => {
    verify(rawBody, headers, context);
    return target(JSON.parse(rawBody.toString('utf8')));
  };
}

export const PROVIDER_WEBHOOKS = {
  gerege: {
    headers: [GEREGE_SIGNATURE_HEADER, GEREGE_EVENT_ID_HEADER],
    secretHeaders: [GEREGE_SIGNATURE_HEADER],
    signed: true,
    orderInQuery: false,
    verify: verifyGeregeWebhook,
    target: geregeWebhookTarget,
    route: verifiedJson(verifyGeregeWebhook, geregeWebhookTarget),
  },
  qutpay: {
    headers: [QUTPAY_SIGNATURE_HEADER],
    secretHeaders: [QUTPAY_SIGNATURE_HEADER],
    signed: true,
    orderInQuery: false,
    verify: verifyQutpayWebhook,
    target: qutpayWebhookTarget,
    route: verifiedJson(verifyQutpayWebhook, qutpayWebhookTarget),
  },
  qpay: {
    // The listener's copy of the URL's query: the only thing the device's verify reads.
    headers: [CALLBACK_QUERY_HEADER],
    secretHeaders: [],
    signed: false,
    orderInQuery: true,
    verify: verifyQpayCallback,
    target: qpayCallbackTarget,
    route: (rawBody, headers) => qpayCallbackTarget(verifyQpayCallback(rawBody, headers)),
  },
} as const satisfies Record<string, ProviderWebhooks>;

export type WebhookProviderName = keyof typeof PROVIDER_WEBHOOKS;

/** The webhook knowledge of `provider`, or undefined for a provider that has none here (the sandbox, a polling-only rail). */
export function providerWebhooks(provider: string): ProviderWebhooks | undefined {
  return Object.hasOwn(PROVIDER_WEBHOOKS, provider) ? PROVIDER_WEBHOOKS[provider as WebhookProviderName] : undefined;
}

/** The headers the relay forwards for `provider`: its own and the common ones, lower case. */
export function forwardedWebhookHeaders(provider: string): readonly string[] {
  return [...WEBHOOK_COMMON_HEADERS, ...(providerWebhooks(provider)?.headers ?? [])];
}

/** Every provider's signature headers: no log line shows them (registered with the logger at import). */
export function secretWebhookHeaders(): readonly string[] {
  return Object.values(PROVIDER_WEBHOOKS).flatMap((p: ProviderWebhooks) => p.secretHeaders);
}

registerSecretHeaders(secretWebhookHeaders());

/**
 * The headers a provider's verify sees: the request's own, plus the query string the listener
 * served under CALLBACK_QUERY_HEADER (QPay names the order only in its callback URL), overwriting
 * any header of that name the caller sent. The device's listener and the fleet relay's both use it.
 */
export function withCallbackQuery(request: {
  url: string;
  headers: Record<string, string | string[] | undefined>;
}): Record<string, string | string[] | undefined> {
  const index = request.url.indexOf('?');
  return { ...request.headers, [CALLBACK_QUERY_HEADER]: index < 0 ? '' : request.url.slice(index + 1) };
}
