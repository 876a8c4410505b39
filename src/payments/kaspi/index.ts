export { createKaspiProvider, type KaspiConfig } from './adapter.js';
export { KASPI_STATUS_MAP, mapKaspiStatus } from './status.js';
export {
  KASPI_RELAY_HEADERS,
  KASPI_RELAY_TOLERANCE_SEC,
  signKaspiRelayRequest,
  verifyKaspiRelayRequest,
  type KaspiRelayAuthFailure,
} from './relay-auth.js';
export {
  KASPI_RELAY_ERRORS,
  EXTERNAL_ID_MAX,
  kaspiExternalId,
  kaspiEnvelopeSchema,
  kaspiQrCreatedSchema,
  kaspiStatusSchema,
  kaspiDetailsSchema,
  kaspiReturnSchema,
  type KaspiEnvelope,
  type KaspiQrCreated,
  type KaspiDetails,
  type RelayQr,
  type RelayPayment,
  type RelayReturn,
} from './wire.js';
