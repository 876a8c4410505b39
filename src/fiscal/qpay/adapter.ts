/**
 * The eBarimt receipt through QPay (`fiscal.register: qpay`): QPay files the receipt of one payment
 * with the tax system (`POST /v2/ebarimt_v3/create`) and returns it (`DELETE /v2/ebarimt_v3/{id}`).
 * A second Mongolian route beside a PosAPI on the operator's server. Translates only; what to do
 * with an outcome is the worker's (docs/receipts.md).
 *
 * How answers map (register-http.ts tells whether a request reached QPay):
 *   token or payment read not reached, refused, 5xx, 429  → unavailable: nothing was filed yet
 *   client id/secret refused (401 on the token)           → blocked: every receipt waits for a person
 *   create not reached, 429, 503                          → unavailable: QPay did not take it
 *   create sent and no complete answer, 500/502/504, an unreadable 2xx → unknown: it may be filed
 *   create 401 (token expired meanwhile)                  → a new token and the same create, once
 *   200 with an id                                        → issued
 *   "already registered" for the payment                  → unknown: QPay holds a receipt for this
 *                                                           payment, most likely ours from an attempt whose answer was lost
 *   any other refusal                                     → rejected with QPay's words
 *
 * Whether QPay refuses, repeats or files again a second create for the same payment is not
 * documented, and QPay documents no read of a payment's receipt. So a create is sent again only
 * when QPay certainly did not take it, and lookup answers `cannot_tell`: a receipt whose answer
 * was lost waits for a person (`vendgate receipt`), who finds it in QPay's merchant portal. Never
 * a second receipt.
 *
 * The token and the client secret are never logged; QR data and lottery numbers are returned to
 * show, never logged.
 */
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { callRegister, describeAnswer, type RegisterCall } from '../register-http.js';
import type { FiscalRegister, IssuedReceipt, LookupOutcome, ReceiptRequest, RegisterOutcome, RegisterStatus } from '../types.js';
import { ebarimtAnswerSchema, errorAnswerSchema, paymentCheckSchema, paymentOfSale, tokenAnswerSchema, tokenExpiry } from './wire.js';

export interface QpayEbarimtOptions {
  /** QPay's API, the payment provider's `provider.baseUrl`. */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** CITIZEN (a person at a vending machine) or COMPANY (then `receiver`: the organisation's TIN). */
  receiverType: 'CITIZEN' | 'COMPANY';
  receiver?: string;
  /** 4 digits: where the machine stands. */
  districtCode: string;
  /** For a line whose item has none: 7 digits. */
  defaultClassificationCode: string;
  /** Bound on one call; default 20 s. */
  timeoutMs?: number;
  logger: Logger;
  clock: Clock;
}

const NAME = 'QPay eBarimt';
/** A token is renewed this long before QPay says it expires. */
const EARLY_MS = 60_000;

type Answer = Extract<RegisterCall, { kind: 'answer' }>;
type Authed = { kind: 'call'; call: RegisterCall } | { kind: 'no_token'; outcome: RegisterOutcome };

export function createQpayEbarimtRegister(options: QpayEbarimtOptions): FiscalRegister {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 20_000;
  const log = options.logger.child({ register: 'qpay' });
  let token: { value: string; until: number } | null = null;

  /** A bearer token, or the outcome that says why there is none (no receipt call was made). */
  async function bearer(): Promise<{ token: string } | { outcome: RegisterOutcome }> {
    if (token && options.clock.now() < token.until - EARLY_MS) return { token: token.value };
    const basic = Buffer.from(`${options.clientId}:${options.clientSecret}`).toString('base64');
    const result = await callRegister({
      url: `${baseUrl}/v2/auth/token`,
      method: 'POST',
      headers: { authorization: `Basic ${basic}` },
      timeoutMs,
      what: `${NAME} POST /v2/auth/token`,
    });
    // A token call files nothing: whatever became of it, no receipt was sent.
    if (result.kind !== 'answer') return { outcome: { kind: 'unavailable', message: result.message } };
    if (result.status === 401 || result.status === 403)
      return {
        outcome: {
          kind: 'blocked',
          message: `${NAME}: QPay refused the client id and secret (HTTP ${result.status}): check provider.clientId and its secret`,
        },
      };
    const parsed = tokenAnswerSchema.safeParse(result.body);
    if (result.status !== 200 || !parsed.success)
      return { outcome: { kind: 'unavailable', message: `${NAME}: no token (${describeAnswer(result)})`, retryAfterMs: 30_000 } };
    token = { value: parsed.data.access_token, until: tokenExpiry(parsed.data.expires_in, options.clock.now()) };
    return { token: token.value };
  }

  /** One call with a bearer token; a 401 (QPay did not take it) renews the token and sends it once more. */
  async function authed(method: 'GET' | 'POST' | 'DELETE', path: string, json?: unknown): Promise<Authed> {
    for (let attempt = 0; ; attempt += 1) {
      const got = await bearer();
      if ('outcome' in got) return { kind: 'no_token', outcome: got.outcome };
      const call = await callRegister({
        url: baseUrl + path,
        method,
        json,
        headers: { authorization: `Bearer ${got.token}` },
        timeoutMs,
        what: `${NAME} ${method} ${path.replace(/\/[^/]+$/, '/…')}`,
      });
      if (call.kind === 'answer' && call.status === 401 && attempt === 0) {
        token = null;
        continue;
      }
      return { kind: 'call', call };
    }
  }

  function words(answer: Answer): { error: string; message: string } | null {
    const parsed = errorAnswerSchema.safeParse(answer.body);
    return parsed.success ? { error: parsed.data.error, message: parsed.data.message ?? parsed.data.error } : null;
  }

  /** The outcome of an answer that is not a success, shared by issue and return. */
  function failure(answer: Answer, what: string): RegisterOutcome {
    const said = words(answer);
    const tail = said ? `: ${said.error}` : '';
    if (answer.status === 429 || answer.status === 503)
      return { kind: 'unavailable', message: `${what}: QPay did not take it (HTTP ${answer.status}${tail})`, retryAfterMs: 30_000 };
    if (answer.status >= 500) return { kind: 'unknown', message: `${what}: HTTP ${answer.status}${tail} (it may have been filed)` };
    if (answer.status === 401 || answer.status === 403)
      return { kind: 'blocked', message: `${what}: QPay refused this merchant's token (HTTP ${answer.status}${tail})` };
    if (said) return { kind: 'rejected', code: `qpay_${said.error.toLowerCase()}`, message: said.message };
    if (answer.status >= 200 && answer.status < 300)
      return { kind: 'unknown', message: `${what}: an answer that cannot be read (${describeAnswer(answer)})` };
    return {
      kind: 'unavailable',
      message: `${what}: HTTP ${answer.status} without QPay's words: check provider.baseUrl`,
      retryAfterMs: 60_000,
    };
  }

  /** The payment the sale was paid with, read from QPay, or the outcome that stops here (nothing filed). */
  async function paymentOf(request: ReceiptRequest): Promise<{ paymentId: string } | { outcome: RegisterOutcome }> {
    const read = await authed('POST', '/v2/payment/check', { object_type: 'INVOICE', object_id: request.payment.invoiceId });
    if (read.kind === 'no_token') return { outcome: read.outcome };
    const { call } = read;
    // A read files nothing: a lost one is as good as one never made.
    if (call.kind !== 'answer') return { outcome: { kind: 'unavailable', message: call.message } };
    const parsed = paymentCheckSchema.safeParse(call.body);
    if (call.status !== 200 || !parsed.success) {
      const outcome = failure(call, `${NAME} payment check`);
      return { outcome: outcome.kind === 'unknown' ? { kind: 'unavailable', message: outcome.message, retryAfterMs: 30_000 } : outcome };
    }
    const paymentId = paymentOfSale(parsed.data, request.total);
    if (paymentId === null)
      return {
        outcome: {
          kind: 'rejected',
          code: 'qpay_no_single_payment',
          message: `QPay shows no single payment of ${request.total} on invoice ${request.payment.invoiceId}: a person must say which payment this sale was`,
        },
      };
    return { paymentId };
  }

  function classification(request: ReceiptRequest): string | null {
    const codes = new Set(request.lines.map((l) => l.classificationCode ?? options.defaultClassificationCode));
    const [only] = codes;
    return codes.size === 1 && only !== undefined ? only : null;
  }

  return {
    name: 'qpay',

    async issue(request: ReceiptRequest): Promise<RegisterOutcome> {
      if (request.payment.provider !== 'qpay')
        return {
          kind: 'rejected',
          code: 'invalid_request',
          message: `QPay files receipts of QPay payments only, not of ${request.payment.provider}`,
        };
      const code = classification(request);
      if (code === null || !/^\d{7}$/.test(code))
        return {
          kind: 'rejected',
          code: 'invalid_request',
          message: 'QPay files one classification code (7 digits) per payment: the lines name none or several',
        };
      const payment = await paymentOf(request);
      if ('outcome' in payment) return payment.outcome;
      const sent = await authed('POST', '/v2/ebarimt_v3/create', {
        payment_id: payment.paymentId,
        ebarimt_receiver_type: options.receiverType,
        ...(options.receiver ? { ebarimt_receiver: options.receiver } : {}),
        district_code: options.districtCode,
        classification_code: code,
      });
      if (sent.kind === 'no_token') return sent.outcome;
      const result = sent.call;
      if (result.kind === 'unreached') return { kind: 'unavailable', message: result.message };
      if (result.kind === 'lost') return { kind: 'unknown', message: result.message };
      const parsed = ebarimtAnswerSchema.safeParse(result.body);
      if (result.status === 200 && parsed.success) {
        const receipt: IssuedReceipt = {
          registerId: parsed.data.id,
          registerDate: parsed.data.created_date ?? new Date(options.clock.now()).toISOString(),
          qrData: parsed.data.ebarimt_qr_data || null,
          lottery: parsed.data.ebarimt_lottery || null,
          offline: false,
        };
        log.info({ orderId: request.orderId, registerId: receipt.registerId, paymentId: payment.paymentId }, 'qpay ebarimt receipt issued');
        return { kind: 'issued', receipt };
      }
      const said = words(result);
      if (said && result.status < 500 && /already/i.test(`${said.error} ${said.message}`))
        return {
          kind: 'unknown',
          message: `QPay holds an eBarimt receipt for payment ${payment.paymentId} already, most likely this one from an attempt whose answer was lost: ${said.message}`,
        };
      const outcome = failure(result, `${NAME} create`);
      log.warn(
        { orderId: request.orderId, paymentId: payment.paymentId, outcome: outcome.kind, httpStatus: result.status },
        'qpay ebarimt receipt not issued',
      );
      return outcome;
    },

    async lookup(request: ReceiptRequest): Promise<LookupOutcome> {
      return {
        kind: 'cannot_tell',
        message: `QPay cannot be asked whether it filed a receipt: look for invoice ${request.payment.invoiceId}'s payment in QPay's merchant portal, then vendgate receipt`,
      };
    },

    async returnReceipt(original: IssuedReceipt, request: ReceiptRequest): Promise<RegisterOutcome> {
      const sent = await authed('DELETE', `/v2/ebarimt_v3/${encodeURIComponent(original.registerId)}`);
      if (sent.kind === 'no_token') return sent.outcome;
      const result = sent.call;
      if (result.kind === 'unreached') return { kind: 'unavailable', message: result.message };
      if (result.kind === 'lost') return { kind: 'unknown', message: result.message };
      const returned: RegisterOutcome = { kind: 'issued', receipt: { ...original, qrData: null, lottery: null } };
      if (result.status >= 200 && result.status < 300) {
        log.info({ orderId: request.orderId, registerId: original.registerId }, 'qpay ebarimt receipt returned');
        return returned;
      }
      // A retry after a lost answer: the receipt is returned already, which is what was asked.
      const said = words(result);
      if (
        said &&
        result.status < 500 &&
        /already/i.test(`${said.error} ${said.message}`) &&
        /cancel|return/i.test(`${said.error} ${said.message}`)
      )
        return returned;
      return failure(result, `${NAME} return`);
    },

    async status(): Promise<RegisterStatus> {
      const got = await bearer();
      const base = { lotteryLeft: null, lastSentAt: null, offlineSince: null };
      if ('outcome' in got) {
        const blocked = got.outcome.kind === 'blocked';
        return { ...base, reachable: blocked, ready: false, detail: 'message' in got.outcome ? got.outcome.message : 'no token' };
      }
      return { ...base, reachable: true, ready: true, detail: `QPay answers with a token for client ${options.clientId}` };
    },
  };
}
