/**
 * Payment providers: the PaymentProvider contract, the HTTP client with the retry matrix, the
 * webhook table, and `createProvider`, which loads the one adapter `provider.name` names (a
 * device never evaluates the other three adapters' code and wire schemas). Each adapter's own
 * exports are in `./adapters.js`. The sandbox provider is built by the app.
 */
import type { Settings } from '../settings/index.js';
import type { PaymentProvider } from './types.js';
import type { HttpClientDeps } from './http.js';

export * from './types.js';
export {
  createProviderHttpClient,
  backoff,
  parseRetryAfter,
  readProviderError,
  RETRY_DEFAULTS,
  type ProviderHttpClient,
  type HttpClientDeps,
  type HttpClientOptions,
  type HttpRequest,
  type HttpResponse,
  type RetryPolicy,
  type RequestSample,
} from './http.js';
export { validateCreateRequest, findInvoiceMismatch, withRefunds } from './invoice-checks.js';
export {
  PROVIDER_WEBHOOKS,
  WEBHOOK_COMMON_HEADERS,
  providerWebhooks,
  forwardedWebhookHeaders,
  secretWebhookHeaders,
  withCallbackQuery,
  type ProviderWebhooks,
  type WebhookProviderName,
} from './webhooks.js';
// What the selftest's signed test event needs of each provider: its signing helper and header
// names. These modules are the webhook table's verifiers (HMAC, no schemas), loaded with it anyway.
export { GEREGE_EVENT_ID_HEADER } from './gerege/webhook.js';
export { GEREGE_SIGNATURE_HEADER, signGeregeTestPayload } from './gerege/signature.js';
export { QUTPAY_SIGNATURE_HEADER, signQutpayTestPayload } from './qutpay/signature.js';
export { qpaySelftestReference } from './qpay/callback.js';

/** QPay's production host: every other base URL (its sandbox, the simulator) is test money. */
const QPAY_LIVE_HOST = 'merchant.qpay.mn';

/** What an adapter is built with: its HTTP client's clock, logger and hooks. */
export type PaymentsDeps = HttpClientDeps;

/**
 * The adapter named by `provider.name`, its module loaded now (and only it). Builds objects only:
 * no network until the first call.
 */
export async function createProvider(deps: PaymentsDeps, settings: Readonly<Settings>): Promise<PaymentProvider> {
  const provider = settings.provider;
  switch (provider.name) {
    case 'sandbox':
      throw new Error('sandbox provider is built by the app');
    case 'gerege':
      return (await import('./gerege/adapter.js')).createGeregeProvider(deps, {
        baseUrl: required(provider.baseUrl, 'provider.baseUrl'),
        clientId: required(provider.clientId, 'provider.clientId'),
        clientSecret: required(provider.clientSecret, 'provider.clientSecret'),
        requestTimeoutMs: provider.requestTimeoutMs,
        createDeadlineMs: provider.createDeadlineMs,
      });
    case 'qutpay':
      return (await import('./qutpay/adapter.js')).createQutpayProvider(deps, {
        baseUrl: required(provider.baseUrl, 'provider.baseUrl'),
        apiKey: required(provider.apiKey, 'provider.apiKey'),
        currency: settings.device.currency,
        requestTimeoutMs: provider.requestTimeoutMs,
        createDeadlineMs: provider.createDeadlineMs,
      });
    case 'qpay': {
      const baseUrl = required(provider.baseUrl, 'provider.baseUrl');
      return (await import('./qpay/adapter.js')).createQpayProvider(deps, {
        baseUrl,
        clientId: required(provider.clientId, 'provider.clientId'),
        clientSecret: required(provider.clientSecret, 'provider.clientSecret'),
        invoiceCode: required(provider.invoiceCode, 'provider.invoiceCode'),
        invoiceReceiverCode: provider.invoiceReceiverCode,
        ...(provider.senderBranchCode ? { senderBranchCode: provider.senderBranchCode } : {}),
        callbackUrl: required(provider.callbackUrl, 'provider.callbackUrl'),
        currency: settings.device.currency,
        livemode: new URL(baseUrl).hostname === QPAY_LIVE_HOST,
        requestTimeoutMs: provider.requestTimeoutMs,
        createDeadlineMs: provider.createDeadlineMs,
      });
    }
    case 'kaspi':
      // The device never calls Kaspi: baseUrl is the fleet relay's Kaspi listener, the secret is this device's there.
      return (await import('./kaspi/adapter.js')).createKaspiProvider(deps, {
        relayUrl: required(provider.baseUrl, 'provider.baseUrl'),
        deviceId: settings.device.id,
        relaySecret: required(provider.clientSecret, 'provider.clientSecret'),
        currency: settings.device.currency,
        requestTimeoutMs: provider.requestTimeoutMs,
        createDeadlineMs: provider.createDeadlineMs,
      });
  }
}

// The settings schema already refuses these; this guards hand-built settings objects in tests.
function required(value: string | undefined, path: string): string {
  if (value === undefined || value === '') throw new Error(`${path} is required for this provider`);
  return value;
}
