export { createGeregeProvider, type GeregeConfig } from './adapter.js';
export { GEREGE_STATUS_MAP, mapGeregeStatus, mapGeregeRefundStatus } from './status.js';
export {
  verifyGeregeSignature,
  signGeregeTestPayload,
  GEREGE_SIGNATURE_HEADER,
  DEFAULT_TOLERANCE_SEC,
  type GeregeSignatureOptions,
  type GeregeSignatureResult,
} from './signature.js';
export { verifyGeregeWebhook, parseGeregeEvent, geregeWebhookTarget, GEREGE_EVENT_ID_HEADER } from './webhook.js';
export { TOKEN_EARLY_REFRESH_MS } from './token.js';
