/**
 * Stable error codes. Each is listed in docs/errors.md with what to do about it; the code, not the
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
  STORAGE: 'VG_ERR_STORAGE',
  INTERNAL: 'VG_ERR_INTERNAL',
  NOT_FOUND: 'VG_ERR_NOT_FOUND',
  UNKNOWN_COMMAND: 'VG_ERR_UNKNOWN_COMMAND',
  REMOTE_VEND_DISABLED: 'VG_ERR_REMOTE_VEND_DISABLED',
  COMMAND_FAILED: 'VG_ERR_COMMAND_FAILED',
  COMMAND_UNSIGNED: 'VG_ERR_COMMAND_UNSIGNED',
  COMMAND_SIGNATURE: 'VG_ERR_COMMAND_SIGNATURE',
  COMMAND_UNKNOWN_KEY: 'VG_ERR_COMMAND_UNKNOWN_KEY',
  COMMAND_EXPIRED: 'VG_ERR_COMMAND_EXPIRED',
  COMMAND_NOT_YET_VALID: 'VG_ERR_COMMAND_NOT_YET_VALID',
  COMMAND_OTHER_DEVICE: 'VG_ERR_COMMAND_OTHER_DEVICE',
  COMMAND_OTHER_TOPIC: 'VG_ERR_COMMAND_OTHER_TOPIC',
  COMMAND_OTHER_DATABASE: 'VG_ERR_COMMAND_OTHER_DATABASE',
  COMMAND_BEFORE_DATABASE: 'VG_ERR_COMMAND_BEFORE_DATABASE',
  COMMAND_MALFORMED: 'VG_ERR_COMMAND_MALFORMED',
  COMMAND_REPLAYED: 'VG_ERR_COMMAND_REPLAYED',
  ALREADY_RUNNING: 'VG_ERR_ALREADY_RUNNING',
  PORT_IN_USE: 'VG_ERR_PORT_IN_USE',
  FORBIDDEN: 'VG_ERR_FORBIDDEN',
  UNAUTHORIZED: 'VG_ERR_UNAUTHORIZED',
  RATE_LIMITED: 'VG_ERR_RATE_LIMITED',
  STARTING: 'VG_ERR_STARTING',
  SOLD_OUT: 'VG_ERR_SOLD_OUT',
  SLOT_JAMMED: 'VG_ERR_SLOT_JAMMED',
  CATALOG_INVALID: 'VG_ERR_CATALOG_INVALID',
  DEX_BEHIND: 'VG_ERR_DEX_BEHIND',
  BROKER_UNAVAILABLE: 'VG_ERR_BROKER_UNAVAILABLE',
  PRICE_MISMATCH: 'VG_ERR_PRICE_MISMATCH',
  CHOOSE_ON_MACHINE: 'VG_ERR_CHOOSE_ON_MACHINE',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** The statuses an error code may answer with over HTTP. */
export type ErrorHttpStatus = 400 | 401 | 403 | 404 | 409 | 429 | 500 | 502 | 503;

/**
 * The HTTP status of each code, decided here once: a throw site names the code, never the status.
 * The local API answers a VendgateError with this status (kiosk/http-errors.ts); codes that only
 * travel over MQTT or the command line keep one too, so an error is the same wherever it surfaces.
 * A failure that needs another status is another code. (The listeners' refusals of a request's
 * form — no such route, body too large, wrong media type — answer with the status HTTP defines for
 * them and are not VendgateErrors: see kiosk/http-errors.ts and channels/webhook/server.ts.)
 */
export const ERROR_HTTP_STATUS = {
  VG_ERR_CONFIG_INVALID: 500,
  VG_ERR_UNKNOWN_SLOT: 400,
  VG_ERR_BAD_REQUEST: 400,
  VG_ERR_DEVICE_BUSY: 409,
  VG_ERR_OUT_OF_SERVICE: 503,
  VG_ERR_PROVIDER_UNAVAILABLE: 503,
  VG_ERR_PROVIDER_REJECTED: 502,
  VG_ERR_PROVIDER_MALFORMED: 502,
  VG_ERR_PROVIDER_AUTH: 502,
  VG_ERR_IDEMPOTENCY_CONFLICT: 502,
  VG_ERR_INVOICE_MISMATCH: 502,
  VG_ERR_REFUND_UNKNOWN: 502,
  VG_ERR_ORDER_NOT_FOUND: 404,
  VG_ERR_ORDER_STATE: 409,
  VG_ERR_WEBHOOK_SIGNATURE: 400,
  VG_ERR_WEBHOOK_MALFORMED: 400,
  VG_ERR_VEND_FAILED: 500,
  VG_ERR_VEND_UNCERTAIN: 500,
  VG_ERR_HARDWARE: 500,
  VG_ERR_DATABASE: 500,
  VG_ERR_STORAGE: 503,
  VG_ERR_INTERNAL: 500,
  VG_ERR_NOT_FOUND: 404,
  VG_ERR_UNKNOWN_COMMAND: 400,
  VG_ERR_REMOTE_VEND_DISABLED: 403,
  VG_ERR_COMMAND_FAILED: 500,
  VG_ERR_COMMAND_UNSIGNED: 403,
  VG_ERR_COMMAND_SIGNATURE: 403,
  VG_ERR_COMMAND_UNKNOWN_KEY: 403,
  VG_ERR_COMMAND_EXPIRED: 403,
  VG_ERR_COMMAND_NOT_YET_VALID: 403,
  VG_ERR_COMMAND_OTHER_DEVICE: 403,
  VG_ERR_COMMAND_OTHER_TOPIC: 400,
  VG_ERR_COMMAND_OTHER_DATABASE: 403,
  VG_ERR_COMMAND_BEFORE_DATABASE: 403,
  VG_ERR_COMMAND_MALFORMED: 400,
  VG_ERR_COMMAND_REPLAYED: 409,
  VG_ERR_ALREADY_RUNNING: 500,
  VG_ERR_PORT_IN_USE: 500,
  VG_ERR_FORBIDDEN: 403,
  VG_ERR_UNAUTHORIZED: 401,
  VG_ERR_RATE_LIMITED: 429,
  VG_ERR_STARTING: 503,
  VG_ERR_SOLD_OUT: 409,
  VG_ERR_SLOT_JAMMED: 409,
  VG_ERR_CATALOG_INVALID: 400,
  VG_ERR_BROKER_UNAVAILABLE: 503,
  VG_ERR_DEX_BEHIND: 409,
  VG_ERR_PRICE_MISMATCH: 409,
  VG_ERR_CHOOSE_ON_MACHINE: 409,
} as const satisfies { readonly [C in ErrorCode]: ErrorHttpStatus };

/** The one status of a code (see ERROR_HTTP_STATUS). */
export type HttpStatusOf<C extends ErrorCode> = (typeof ERROR_HTTP_STATUS)[C];

export function httpStatusOf<C extends ErrorCode>(code: C): HttpStatusOf<C> {
  return ERROR_HTTP_STATUS[code];
}

export interface VendgateErrorOptions<C extends ErrorCode> {
  details?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * Base class of every error vendgate raises on purpose. `httpStatus` is what the local API answers;
 * it comes from the code (ERROR_HTTP_STATUS) and cannot be chosen where the error is thrown.
 */
export class VendgateError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly httpStatus: HttpStatusOf<C>;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: C, message: string, options: VendgateErrorOptions<C> = {}) {
    super(message, { cause: options.cause });
    this.name = 'VendgateError';
    this.code = code;
    this.httpStatus = httpStatusOf(code);
    this.details = options.details;
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
