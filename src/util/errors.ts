/**
 * Stable error codes. Each is listed in the README with what to do about it; the code, not the
 * message, is what operators and scripts match on.
 */
export const ErrorCodes = {
  CONFIG_INVALID: 'VG_ERR_CONFIG_INVALID',
  UNKNOWN_SLOT: 'VG_ERR_UNKNOWN_SLOT',
  BAD_REQUEST: 'VG_ERR_BAD_REQUEST',
  DEVICE_BUSY: 'VG_ERR_DEVICE_BUSY',
  OUT_OF_SERVICE: 'VG_ERR_OUT_OF_SERVICE',
  PROVIDER_UNAVAILABLE: 'VG_ERR_PROVIDER_UNAVAILABLE',
  PROVIDER_REJECTED: 'VG_ERR_PROVIDER_REJECTED',
  PROVIDER_MALFORMED: 'VG_ERR_PROVIDER_MALFORMED',
  PROVIDER_AUTH: 'VG_ERR_PROVIDER_AUTH',
  IDEMPOTENCY_CONFLICT: 'VG_ERR_IDEMPOTENCY_CONFLICT',
  INVOICE_MISMATCH: 'VG_ERR_INVOICE_MISMATCH',
  REFUND_UNKNOWN: 'VG_ERR_REFUND_UNKNOWN',
  ORDER_NOT_FOUND: 'VG_ERR_ORDER_NOT_FOUND',
  ORDER_STATE: 'VG_ERR_ORDER_STATE',
  WEBHOOK_SIGNATURE: 'VG_ERR_WEBHOOK_SIGNATURE',
  WEBHOOK_MALFORMED: 'VG_ERR_WEBHOOK_MALFORMED',
  VEND_FAILED: 'VG_ERR_VEND_FAILED',
  VEND_UNCERTAIN: 'VG_ERR_VEND_UNCERTAIN',
  HARDWARE: 'VG_ERR_HARDWARE',
  DATABASE: 'VG_ERR_DATABASE',
  INTERNAL: 'VG_ERR_INTERNAL',
  NOT_FOUND: 'VG_ERR_NOT_FOUND',
  UNKNOWN_COMMAND: 'VG_ERR_UNKNOWN_COMMAND',
  REMOTE_VEND_DISABLED: 'VG_ERR_REMOTE_VEND_DISABLED',
  COMMAND_FAILED: 'VG_ERR_COMMAND_FAILED',
  ALREADY_RUNNING: 'VG_ERR_ALREADY_RUNNING',
  PORT_IN_USE: 'VG_ERR_PORT_IN_USE',
  FORBIDDEN: 'VG_ERR_FORBIDDEN',
  RATE_LIMITED: 'VG_ERR_RATE_LIMITED',
  STARTING: 'VG_ERR_STARTING',
  SOLD_OUT: 'VG_ERR_SOLD_OUT',
  SLOT_JAMMED: 'VG_ERR_SLOT_JAMMED',
  CATALOG_INVALID: 'VG_ERR_CATALOG_INVALID',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** Base class of every error vendgate raises on purpose. `httpStatus` is what the local API answers. */
export class VendgateError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: { httpStatus?: number; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'VendgateError';
    this.code = code;
    this.httpStatus = options.httpStatus ?? 500;
    this.details = options.details;
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
