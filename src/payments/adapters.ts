/**
 * Everything each real adapter exports: its factory, status tables, signature helpers and wire
 * schemas. For the tests, the selftest's test events and the fleet relay. The device's money path
 * imports `./index.js` instead, where `createProvider` loads only the adapter `provider.name` names:
 * importing this file evaluates all four adapters and their wire schemas.
 */
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
