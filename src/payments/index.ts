/**
 * Payment providers: the PaymentProvider contract, the real adapters (Gerege, QutPay) and the
 * HTTP client with the retry matrix. The sandbox provider is built by the app.
 */
import type { Settings } from '../settings/index.js';
import type { PaymentProvider } from './types.js';
import type { HttpClientDeps } from './http.js';
import { createGeregeProvider } from './gerege/index.js';
import { createQutpayProvider } from './qutpay/index.js';
import { createQpayProvider } from './qpay/index.js';
import { createKaspiProvider } from './kaspi/index.js';

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
  type RouteLookupKey,
  type WebhookProviderName,
} from './webhooks.js';
export {
  createGeregeProvider,
  GEREGE_STATUS_MAP,
  mapGeregeStatus,
  mapGeregeRefundStatus,
  verifyGeregeSignature,
  signGeregeTestPayload,
  verifyGeregeWebhook,
  parseGeregeEvent,
  geregeWebhookTarget,
  GEREGE_SIGNATURE_HEADER,
  GEREGE_EVENT_ID_HEADER,
  DEFAULT_TOLERANCE_SEC,
  TOKEN_EARLY_REFRESH_MS,
  type GeregeConfig,
  type GeregeSignatureOptions,
  type GeregeSignatureResult,
} from './gerege/index.js';
export {
  createQutpayProvider,
  QUTPAY_STATUS_MAP,
  mapQutpayStatus,
  mapQutpayRefundStatus,
  verifyQutpaySignature,
  signQutpayTestPayload,
  verifyQutpayWebhook,
  parseQutpayEvent,
  qutpayWebhookTarget,
  QUTPAY_SIGNATURE_HEADER,
  type QutpayConfig,
} from './qutpay/index.js';
export {
  createQpayProvider,
  mapQpayStatus,
  senderInvoiceNo,
  qpaySelftestReference,
  HINT_WINDOW_MS,
  verifyQpayCallback,
  qpayCallbackTarget,
  type QpayConfig,
} from './qpay/index.js';

export {
  createKaspiProvider,
  mapKaspiStatus,
  KASPI_STATUS_MAP,
  KASPI_RELAY_HEADERS,
  KASPI_RELAY_TOLERANCE_SEC,
  KASPI_RELAY_ERRORS,
  signKaspiRelayRequest,
  verifyKaspiRelayRequest,
  kaspiExternalId,
  kaspiEnvelopeSchema,
  kaspiQrCreatedSchema,
  kaspiStatusSchema,
  kaspiDetailsSchema,
  kaspiReturnSchema,
  type KaspiConfig,
  type KaspiRelayAuthFailure,
  type KaspiEnvelope,
  type KaspiQrCreated,
  type KaspiDetails,
  type RelayQr,
  type RelayPayment,
  type RelayReturn,
} from './kaspi/index.js';

/** QPay's production host: every other base URL (its sandbox, the simulator) is test money. */
const QPAY_LIVE_HOST = 'merchant.qpay.mn';

/** What an adapter is built with: its HTTP client's clock, logger and hooks. */
export type PaymentsDeps = HttpClientDeps;

/** The adapter named by `provider.name`. Builds objects only: no network until the first call. */
export function createProvider(deps: PaymentsDeps, settings: Readonly<Settings>): PaymentProvider {
  const provider = settings.provider;
  switch (provider.name) {
    case 'sandbox':
      throw new Error('sandbox provider is built by the app');
    case 'gerege':
      return createGeregeProvider(deps, {
        baseUrl: required(provider.baseUrl, 'provider.baseUrl'),
        clientId: required(provider.clientId, 'provider.clientId'),
        clientSecret: required(provider.clientSecret, 'provider.clientSecret'),
        requestTimeoutMs: provider.requestTimeoutMs,
        createDeadlineMs: provider.createDeadlineMs,
      });
    case 'qutpay':
      return createQutpayProvider(deps, {
        baseUrl: required(provider.baseUrl, 'provider.baseUrl'),
        apiKey: required(provider.apiKey, 'provider.apiKey'),
        currency: settings.device.currency,
        requestTimeoutMs: provider.requestTimeoutMs,
        createDeadlineMs: provider.createDeadlineMs,
      });
    case 'qpay': {
      const baseUrl = required(provider.baseUrl, 'provider.baseUrl');
      return createQpayProvider(deps, {
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
      return createKaspiProvider(deps, {
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
