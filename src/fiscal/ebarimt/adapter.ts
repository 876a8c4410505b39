/**
 * The eBarimt PosAPI 3.x register: one merchant (TIN, POS and branch numbers, district) on a
 * PosAPI daemon that may serve many. Translates only; what to do with an outcome is the worker's.
 *
 * How answers map (register-http.ts tells whether a request reached PosAPI):
 *   not reached, 503 (down, or a proxy without it)  → unavailable: nothing was filed
 *   sent and no complete answer, 500/502/504, a 2xx that cannot be read → unknown: it may be filed
 *   200 SUCCESS with a 33-digit id                  → issued
 *   an ERROR/PAYMENT answer                        → rejected with PosAPI's message
 *   an ERROR saying PosAPI is not activated        → blocked: every receipt waits for the activation
 *   an ERROR naming the billIdSuffix (already used today) → unknown: PosAPI holds a receipt under
 *     this suffix, most likely ours from an attempt whose answer was lost
 *
 * lookup(): PosAPI has no way to ask whether it holds a receipt for a billIdSuffix (its REST
 * service is POST/DELETE /rest/receipt, /rest/info, /rest/sendData and /rest/bankAccounts;
 * nothing lists or reads receipts), and sending the receipt again to see whether the suffix is
 * refused would file a second receipt wherever PosAPI does not enforce the suffix. So lookup
 * always answers `cannot_tell` (which says nothing of whether PosAPI answers): a receipt whose answer was lost is for a person, who finds it by its
 * billIdSuffix in PosAPI's own screen. It never answers `absent`.
 *
 * The base URL is never logged nor put in a message (PosAPI has no authentication: its address is
 * the secret). QR data and lottery numbers are returned to show, never logged.
 */
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { callRegister, describeAnswer, type RegisterCall } from '../register-http.js';
import type { TaxRegistration } from '../tax.js';
import type { FiscalRegister, IssuedReceipt, LookupOutcome, ReceiptRequest, RegisterOutcome, RegisterStatus } from '../types.js';
import {
  billIdSuffixOf,
  infoAnswerSchema,
  parsePosDate,
  receiptAnswerSchema,
  receiptBody,
  refusalOf,
  type ReceiptIdentity,
} from './wire.js';

export interface EbarimtOptions {
  /** PosAPI's base URL, e.g. http://10.0.0.5:7080. A secret place: never logged. */
  baseUrl: string;
  merchantTin: string;
  posNo: string;
  /** 3 digits, the merchant's own branch numbering ("1" is sent as "001"). */
  branchNo: string;
  /** 4 digits: where the machine stands. */
  districtCode: string;
  /** The merchant's registrations: VAT payer, city tax (Ulaanbaatar). */
  registration: TaxRegistration;
  /** Default BANK_TRANSFER (a QR wallet payment). */
  paymentCode?: string;
  /** Default "ш" (piece). */
  defaultUnit?: string;
  /** For lines whose item has none; default null (such a line is refused before any call). */
  defaultClassificationCode?: string | null;
  /** Bound on one call. PosAPI can take tens of seconds while it sends its queue; default 30 s. */
  timeoutMs?: number;
  /** PosAPI's zone, default UTC+8 (Ulaanbaatar). */
  utcOffsetMinutes?: number;
  logger: Logger;
  clock: Clock;
}

const NAME = 'PosAPI';

export function createEbarimtRegister(options: EbarimtOptions): FiscalRegister {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const utcOffset = options.utcOffsetMinutes ?? 480;
  const log = options.logger.child({ register: 'ebarimt' });
  const identity: ReceiptIdentity = {
    merchantTin: options.merchantTin,
    posNo: options.posNo,
    // PosAPI wants 3 digits ("001"); a shorter number is the same branch.
    branchNo: /^\d{1,2}$/.test(options.branchNo) ? options.branchNo.padStart(3, '0') : options.branchNo,
    districtCode: options.districtCode,
    registration: options.registration,
    paymentCode: options.paymentCode ?? 'BANK_TRANSFER',
    defaultUnit: options.defaultUnit ?? 'ш',
    defaultClassificationCode: options.defaultClassificationCode ?? null,
  };

  const call = (method: 'GET' | 'POST' | 'DELETE', path: string, json?: unknown): Promise<RegisterCall> =>
    callRegister({ url: baseUrl + path, method, json, timeoutMs, what: `${NAME} ${method} ${path}` });

  /** The outcome of an answer that is not a success, shared by issue and return. */
  function failure(answer: Extract<RegisterCall, { kind: 'answer' }>, what: string): RegisterOutcome {
    const refusal = refusalOf(answer.body);
    if (answer.status === 503)
      return {
        kind: 'unavailable',
        message: `${what}: PosAPI is not available (HTTP 503${refusal ? `: ${refusal.message}` : ''})`,
        retryAfterMs: 30_000,
      };
    if (answer.status >= 500)
      return {
        kind: 'unknown',
        message: `${what}: HTTP ${answer.status}${refusal ? `: ${refusal.message}` : ''} (it may have been filed)`,
      };
    // Not activated: PosAPI refuses every receipt until an operator activates it; nothing was filed.
    if (refusal && /not activated/i.test(refusal.message))
      return { kind: 'blocked', message: `${what}: ${refusal.message} (PosAPI's own screen, on the operator's server)` };
    if (refusal) return { kind: 'rejected', code: `posapi_${refusal.status.toLowerCase()}`, message: refusal.message };
    if (answer.status >= 200 && answer.status < 300)
      return { kind: 'unknown', message: `${what}: an answer that cannot be read (${describeAnswer(answer)})` };
    // Not PosAPI's words (a proxy's page, a wrong path): PosAPI did not take it.
    return {
      kind: 'unavailable',
      message: `${what}: HTTP ${answer.status} without a PosAPI answer: check the register's URL`,
      retryAfterMs: 60_000,
    };
  }

  return {
    name: 'ebarimt',

    async issue(request: ReceiptRequest): Promise<RegisterOutcome> {
      const built = receiptBody(request, identity);
      if ('problems' in built) return { kind: 'rejected', code: 'invalid_request', message: built.problems.join('; ') };
      const suffix = billIdSuffixOf(request.key);
      const result = await call('POST', '/rest/receipt', built.body);
      if (result.kind === 'unreached') return { kind: 'unavailable', message: result.message };
      if (result.kind === 'lost') return { kind: 'unknown', message: result.message };
      const parsed = receiptAnswerSchema.safeParse(result.body);
      if (result.status === 200 && parsed.success) {
        const receipt: IssuedReceipt = {
          registerId: parsed.data.id,
          registerDate: parsed.data.date,
          qrData: parsed.data.qrData || null,
          lottery: parsed.data.lottery || null,
          offline: false,
        };
        log.info(
          { orderId: request.orderId, registerId: receipt.registerId, billIdSuffix: suffix, lottery: receipt.lottery !== null },
          'ebarimt receipt issued',
        );
        return { kind: 'issued', receipt };
      }
      const refusal = refusalOf(result.body);
      if (refusal && result.status < 500 && /billIdSuffix/i.test(refusal.message)) {
        return {
          kind: 'unknown',
          message: `PosAPI already holds a receipt under billIdSuffix ${suffix} today, most likely this one from an attempt whose answer was lost: ${refusal.message}`,
        };
      }
      const outcome = failure(result, `${NAME} receipt`);
      log.warn(
        { orderId: request.orderId, billIdSuffix: suffix, outcome: outcome.kind, httpStatus: result.status },
        'ebarimt receipt not issued',
      );
      return outcome;
    },

    async lookup(request: ReceiptRequest): Promise<LookupOutcome> {
      return {
        kind: 'cannot_tell',
        message: `PosAPI cannot be asked whether it holds a receipt: look for billIdSuffix ${billIdSuffixOf(request.key)} in PosAPI's receipt list`,
      };
    },

    async returnReceipt(original: IssuedReceipt, request: ReceiptRequest): Promise<RegisterOutcome> {
      const result = await call('DELETE', '/rest/receipt', { id: original.registerId, date: original.registerDate });
      if (result.kind === 'unreached') return { kind: 'unavailable', message: result.message };
      if (result.kind === 'lost') return { kind: 'unknown', message: result.message };
      const refusal = refusalOf(result.body);
      const returned: RegisterOutcome = { kind: 'issued', receipt: { ...original, qrData: null, lottery: null } };
      if (result.status >= 200 && result.status < 300 && !refusal) {
        log.info({ orderId: request.orderId, registerId: original.registerId }, 'ebarimt receipt returned');
        return returned;
      }
      // A retry after a lost answer: the receipt is returned already, which is what was asked.
      if (refusal && result.status < 500 && /already/i.test(refusal.message) && /return/i.test(refusal.message)) return returned;
      return failure(result, `${NAME} return`);
    },

    async status(): Promise<RegisterStatus> {
      const down = (detail: string): RegisterStatus => ({
        reachable: false,
        ready: false,
        lotteryLeft: null,
        lastSentAt: null,
        offlineSince: null,
        detail,
      });
      const result = await call('GET', '/rest/info');
      if (result.kind !== 'answer') return down(result.message);
      const info = infoAnswerSchema.safeParse(result.body);
      if (result.status !== 200 || !info.success)
        return down(`${NAME} GET /rest/info: ${describeAnswer(result)}, not PosAPI's information`);
      const merchants = info.data.merchants ?? [];
      const registered = merchants.some((m) => m.tin === options.merchantTin);
      const lotteryLeft = info.data.leftLotteries ?? null;
      const lastSentAt = parsePosDate(info.data.lastSentDate, utcOffset);
      const detail = !info.data.posNo
        ? 'PosAPI is not activated: an operator must log in to it and activate it'
        : !registered
          ? `PosAPI ${info.data.posNo} is not registered for merchant ${options.merchantTin}`
          : `PosAPI ${info.data.posNo}: ${lotteryLeft ?? '?'} lottery numbers left, last sent ${info.data.lastSentDate || 'never'}`;
      return { reachable: true, ready: Boolean(info.data.posNo) && registered, lotteryLeft, lastSentAt, offlineSince: null, detail };
    },

    /** GET /rest/sendData: PosAPI sends its queue to the tax system now. Throws with the reason when it cannot. */
    async flush(): Promise<void> {
      const result = await call('GET', '/rest/sendData');
      if (result.kind !== 'answer') throw new Error(result.message);
      const refusal = refusalOf(result.body);
      if (result.status < 200 || result.status >= 300 || refusal)
        throw new Error(`${NAME} GET /rest/sendData: HTTP ${result.status}${refusal ? `: ${refusal.message}` : ''}`);
    },
  };
}
