/**
 * Webkassa's answers in the port's words (README.md "How outcomes are told"): which errors mean
 * nothing was done (`unavailable`), a person must look at this check (`rejected`) or at the register
 * (`blocked`: login, token, API key, cashbox), or the check may exist (`unknown`).
 */
import { describeAnswer, type RegisterCall } from '../register-http.js';
import type { IssuedReceipt, RegisterOutcome } from '../types.js';
import { WK_CODES, checkDataSchema, envelopeSchema, firstError, type CheckData } from './wire.js';

export type Answer = Extract<RegisterCall, { kind: 'answer' }>;

/** The outcome of a Check answer; `receiptOf` reads a check (and notes what the answer says of the cashbox). */
export function checkOutcome(
  result: Answer,
  what: string,
  receiptOf: (data: CheckData) => IssuedReceipt,
  noteOffline: (offline: boolean, pastLimit: boolean) => void,
): RegisterOutcome {
  if (result.status !== 200) return httpFailure(result, what);
  const error = firstError(result.body);
  const data = checkDataSchema.safeParse(envelopeSchema.safeParse(result.body).data?.Data);
  if (!error) {
    if (data.success) return { kind: 'issued', receipt: receiptOf(data.data) };
    return { kind: 'unknown', message: `${what}: an answer without a check (${describeAnswer(result)})` };
  }
  const message = `${what}: ${error.text} (error ${error.code})`;
  switch (error.code) {
    case WK_CODES.DUPLICATE_EXTERNAL_NUMBER:
      // The check is already held under this ExternalCheckNumber: ours, from an earlier attempt.
      if (data.success) return { kind: 'issued', receipt: receiptOf(data.data) };
      return { kind: 'unknown', message: `${message}: held already, look it up` };
    case WK_CODES.BUSY:
      return { kind: 'unavailable', message, retryAfterMs: 1_000 };
    case WK_CODES.SERVICE_UNAVAILABLE:
      return { kind: 'unavailable', message, retryAfterMs: 30_000 };
    case WK_CODES.OFFLINE_TOO_LONG:
      noteOffline(true, true);
      return { kind: 'unavailable', message: `${message}: the cashbox must reach the fiscal data operator again`, retryAfterMs: 600_000 };
    case WK_CODES.SHIFT_OVER_24H:
      return { kind: 'unavailable', message: `${message}: the Z report that closes the shift did not go through`, retryAfterMs: 60_000 };
    // Conditions of the register, not of this check: nothing was taken, every check would be
    // refused alike until a person acts; the check waits (blocked) and is sent again after.
    case WK_CODES.WRONG_CREDENTIALS:
    case WK_CODES.SESSION_EXPIRED:
    case WK_CODES.NOT_AUTHORIZED:
      return { kind: 'blocked', message: `${message}: check the cashier's login and password (or token) in fiscal.webkassa, and restart` };
    case WK_CODES.NO_ACCESS:
    case WK_CODES.NO_CASHBOX_ACCESS:
    case WK_CODES.CASHBOX_NOT_FOUND:
    case WK_CODES.CASHBOX_BLOCKED:
    case WK_CODES.CASHBOX_NOT_ACTIVATED:
      return {
        kind: 'blocked',
        message: `${message}: the cashbox of fiscal.webkassa.cashboxId must exist, be activated and open to this cashier in Webkassa's cabinet`,
      };
    case WK_CODES.VALIDATION:
      return { kind: 'rejected', code: 'invalid_request', message: error.text };
    default:
      return { kind: 'rejected', code: `webkassa_${error.code}`, message };
  }
}

/** An HTTP-level failure (not Webkassa's Errors). */
export function httpFailure(result: Answer, what: string): RegisterOutcome {
  if (result.status === 503) return { kind: 'unavailable', message: `${what}: HTTP 503 (not available)`, retryAfterMs: 30_000 };
  if (result.status >= 500) return { kind: 'unknown', message: `${what}: HTTP ${result.status} (it may have been done)` };
  if (result.status === 401 || result.status === 403)
    return { kind: 'blocked', message: `${what}: HTTP ${result.status}: check the API key (fiscal.webkassa.apiKey)` };
  if (result.status >= 200 && result.status < 300)
    return { kind: 'unknown', message: `${what}: an answer that cannot be read (${describeAnswer(result)})` };
  return {
    kind: 'unavailable',
    message: `${what}: HTTP ${result.status} without a Webkassa answer: check the register's URL`,
    retryAfterMs: 60_000,
  };
}
