export { createQutpayProvider, type QutpayConfig } from './adapter.js';
export { QUTPAY_STATUS_MAP, mapQutpayStatus, mapQutpayRefundStatus } from './status.js';
export { verifyQutpaySignature, signQutpayTestPayload, QUTPAY_SIGNATURE_HEADER } from './signature.js';
export { verifyQutpayWebhook, parseQutpayEvent, qutpayWebhookTarget } from './webhook.js';
