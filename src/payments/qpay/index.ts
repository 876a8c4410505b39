export { createQpayProvider, type QpayConfig } from './adapter.js';
export { QPAY_PAYMENT_STATUS_MAP, QPAY_INVOICE_STATUS_MAP, mapQpayStatus, mapQpayPaymentStatus, mapQpayInvoiceStatus } from './status.js';
export { senderInvoiceNo, SENDER_INVOICE_NO_MAX } from './number.js';
export {
  QPAY_SELFTEST_PREFIX,
  HINT_WINDOW_MS,
  callbackUrlFor,
  verifyQpayCallback,
  qpayCallbackTarget,
  qpayHintEvent,
  qpaySelftestReference,
} from './callback.js';
export { QPAY_TOKEN_EARLY_REFRESH_MS, expiryOf } from './token.js';
