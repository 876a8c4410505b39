/**
 * A Webkassa-like Kazakh cloud register: one cashbox of an organisation. Translates only; what to
 * do with an outcome is the worker's.
 *
 * - The receipt's key is its ExternalCheckNumber, Webkassa's idempotency key: a check sent again
 *   with it is answered with error 14 and the check already held, which is `issued`.
 * - Calls of one cashbox go one at a time (queue.ts): Webkassa refuses overlapping ones.
 * - A session Token (from Authorize, a secret: never logged) is reused until Webkassa says it
 *   expired (error 2) or is unknown (3); then the adapter authorizes once more and repeats the call
 *   with the same ExternalCheckNumber. A token that cannot be renewed, a refused login or API key,
 *   a cashbox that is missing, blocked or not activated are `blocked`: conditions of the register,
 *   not of a receipt; the receipts wait until it takes them again.
 * - A shift open longer than 24 hours (error 11) is closed with a Z report, then the check is sent
 *   once more.
 * - Offline mode: answers say whether the cashbox works offline (`OfflineMode`, `CashboxOfflineMode`);
 *   the adapter remembers when it first heard so (status().offlineSince). Webkassa refuses checks
 *   once a cashbox has been offline too long (error 18, 72 h by default here): `unavailable`, until
 *   it reaches the fiscal data operator again.
 *
 * lookup() asks GET-ticket-by-ExternalCheckNumber: the check (`found`) or error 16 (`absent`).
 * `absent` is safe even if Webkassa's history lagged behind a check it holds: issuing again with
 * the same ExternalCheckNumber answers that check (error 14), never a second one.
 */
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { callRegister, describeAnswer, type RegisterCall } from '../register-http.js';
import type { FiscalRegister, IssuedReceipt, LookupOutcome, ReceiptRequest, RegisterOutcome, RegisterStatus } from '../types.js';
import { checkOutcome, httpFailure } from './outcomes.js';
import { inCashboxLine } from './queue.js';
import {
  OPERATION,
  WK_CODES,
  cashboxesDataSchema,
  checkBody,
  checkDataSchema,
  envelopeSchema,
  externalCheckNumberOf,
  firstError,
  tokenDataSchema,
  type CheckData,
  type CheckIdentity,
} from './wire.js';

export interface WebkassaOptions {
  /** e.g. https://devkkm.webkassa.kz */
  baseUrl: string;
  /** Sent as x-api-key on every call; null where the account has none. A secret. */
  apiKey: string | null;
  /** The cashier's login and password (a secret): the adapter authorizes and renews the session itself. */
  login?: string;
  password?: string;
  /**
   * A session Token issued beforehand (a secret), for an account set up without login and password
   * here: used until Webkassa says it expired, then every call is rejected (`auth`) until a new one is set.
   */
  token?: string;
  cashboxUniqueNumber: string;
  /** The organisation is a VAT payer: every position carries VAT inside its price. */
  vatPayer: boolean;
  /** Default 16 (Kazakhstan since 2026). */
  vatPercent?: number;
  /** PaymentType of a QR wallet payment; default 4 (mobile). */
  paymentType?: number;
  /** UnitCode for lines without one; default 796 (a piece). */
  unitCode?: number;
  /** How long the cashbox may work offline before Webkassa blocks it; default 72 h. */
  offlineLimitMs?: number;
  /** Bound on one call; default 30 s. */
  timeoutMs?: number;
  logger: Logger;
  clock: Clock;
}

type Authed = RegisterCall | { kind: 'outcome'; outcome: RegisterOutcome };

export function createWebkassaRegister(options: WebkassaOptions): FiscalRegister {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const offlineLimitMs = options.offlineLimitMs ?? 72 * 3600_000;
  const log = options.logger.child({ register: 'webkassa', cashbox: options.cashboxUniqueNumber });
  const line = `${baseUrl}|${options.cashboxUniqueNumber}`;
  const identity: CheckIdentity = {
    cashboxUniqueNumber: options.cashboxUniqueNumber,
    vatPayer: options.vatPayer,
    vatPercent: options.vatPercent ?? 16,
    paymentType: options.paymentType ?? 4,
    unitCode: options.unitCode ?? 796,
  };
  let token: string | null = options.token ?? null;
  const canAuthorize = options.login !== undefined && options.password !== undefined;
  let registrationNumber: string | null = null;
  let offlineSince: number | null = null;

  const post = (path: string, body: Record<string, unknown>): Promise<RegisterCall> =>
    callRegister({
      url: baseUrl + path,
      method: 'POST',
      json: body,
      headers: options.apiKey === null ? {} : { 'x-api-key': options.apiKey },
      timeoutMs,
      what: `Webkassa POST ${path}`,
    });

  async function authorize(): Promise<RegisterOutcome | null> {
    if (!canAuthorize) {
      return {
        kind: 'blocked',
        message:
          'the Webkassa session token expired or was refused, and no login is set to renew it: set a new token (fiscal.webkassa.token) or a login and password, and restart',
      };
    }
    const result = await post('/api/v4/Authorize', { Login: options.login, Password: options.password });
    // Authorize changes nothing: an unanswered one is as good as none.
    if (result.kind !== 'answer') return { kind: 'unavailable', message: result.message };
    if (result.status !== 200) {
      const failure = httpFailure(result, 'Webkassa Authorize');
      // Authorize changes nothing: even a 500 leaves no check behind.
      return failure.kind === 'unknown' ? { kind: 'unavailable', message: failure.message, retryAfterMs: 30_000 } : failure;
    }
    const data = tokenDataSchema.safeParse(envelopeSchema.safeParse(result.body).data?.Data);
    if (data.success) {
      token = data.data.Token;
      return null;
    }
    const error = firstError(result.body);
    if (error)
      return {
        kind: 'blocked',
        message: `Webkassa refused the login: ${error.text} (error ${error.code}): check fiscal.webkassa.login and VENDGATE_FISCAL_WEBKASSA_PASSWORD, and restart`,
      };
    return {
      kind: 'unavailable',
      message: `Webkassa Authorize: an answer without a Token (${describeAnswer(result)})`,
      retryAfterMs: 60_000,
    };
  }

  /** A call with the session Token; an expired or unknown Token is renewed once and the call repeated. */
  async function authed(path: string, body: Record<string, unknown>): Promise<Authed> {
    for (let attempt = 1; ; attempt += 1) {
      if (token === null) {
        const failed = await authorize();
        if (failed) return { kind: 'outcome', outcome: failed };
      }
      const result = await post(path, { ...body, Token: token });
      const error = result.kind === 'answer' ? firstError(result.body) : null;
      if (attempt === 1 && error && (error.code === WK_CODES.SESSION_EXPIRED || error.code === WK_CODES.NOT_AUTHORIZED)) {
        token = null;
        continue;
      }
      return result;
    }
  }

  /** `pastLimit`: Webkassa said the offline limit is exceeded, so it went offline at least the limit ago. */
  function noteOffline(offline: boolean | null | undefined, pastLimit = false): void {
    if (offline === true && pastLimit) {
      const latest = options.clock.now() - offlineLimitMs - 1;
      if (offlineSince === null || offlineSince > latest) offlineSince = latest;
    } else if (offline === true && offlineSince === null) {
      offlineSince = options.clock.now();
      log.warn({ offlineSince }, 'webkassa cashbox works offline');
    } else if (offline === false && offlineSince !== null) {
      offlineSince = null;
      log.info('webkassa cashbox is online again');
    }
  }

  function receiptOf(data: CheckData): IssuedReceipt {
    if (data.Cashbox?.RegistrationNumber) registrationNumber = data.Cashbox.RegistrationNumber;
    noteOffline(data.CashboxOfflineMode ?? data.OfflineMode);
    return {
      registerId: data.CheckNumber,
      registerDate: data.DateTime,
      qrData: data.TicketUrl ?? null,
      lottery: null,
      offline: data.OfflineMode === true,
    };
  }

  /** A Check, with the Z report a shift over 24 hours needs. */
  async function sendCheck(body: Record<string, unknown>, what: string): Promise<RegisterOutcome> {
    for (let attempt = 1; ; attempt += 1) {
      const result = await authed('/api/v4/Check', body);
      if (result.kind === 'outcome') return result.outcome;
      if (result.kind === 'unreached') return { kind: 'unavailable', message: result.message };
      if (result.kind === 'lost') return { kind: 'unknown', message: result.message };
      if (attempt === 1 && firstError(result.body)?.code === WK_CODES.SHIFT_OVER_24H) {
        const z = await authed('/api/v4/ZReport', { CashboxUniqueNumber: options.cashboxUniqueNumber });
        const zError = z.kind === 'answer' ? firstError(z.body) : null;
        log.info(
          { closed: z.kind === 'answer' && z.status === 200 && zError === null, zError: zError?.code },
          'webkassa shift over 24 h: Z report',
        );
        continue;
      }
      return checkOutcome(result, what, receiptOf, noteOffline);
    }
  }

  async function findByExternalNumber(externalCheckNumber: string): Promise<LookupOutcome> {
    const result = await authed('/api-history/v4/Ticket/GetTicketByExternalCheckNumber', {
      CashboxUniqueNumber: options.cashboxUniqueNumber,
      ExternalCheckNumber: externalCheckNumber,
    });
    if (result.kind === 'outcome') {
      const message = 'message' in result.outcome ? result.outcome.message : 'authorization failed';
      return result.outcome.kind === 'blocked' ? { kind: 'blocked', message } : { kind: 'unknown', message };
    }
    if (result.kind !== 'answer') return { kind: 'unknown', message: result.message };
    if (result.status !== 200) return { kind: 'unknown', message: `Webkassa ticket lookup: ${describeAnswer(result)}` };
    const error = firstError(result.body);
    if (error?.code === WK_CODES.CHECK_NOT_FOUND) return { kind: 'absent' };
    const data = checkDataSchema.safeParse(envelopeSchema.safeParse(result.body).data?.Data);
    if (!error && data.success) return { kind: 'found', receipt: receiptOf(data.data) };
    return {
      kind: 'unknown',
      message: error ? `Webkassa ticket lookup: ${error.text} (error ${error.code})` : 'Webkassa ticket lookup: an answer without a check',
    };
  }

  return {
    name: 'webkassa',

    issue(request: ReceiptRequest): Promise<RegisterOutcome> {
      return inCashboxLine(line, async () => {
        const built = checkBody(request, identity, OPERATION.sale, externalCheckNumberOf(request.key));
        if ('problems' in built) return { kind: 'rejected', code: 'invalid_request', message: built.problems.join('; ') };
        const outcome = await sendCheck(built.body, 'Webkassa check');
        log.info(
          {
            orderId: request.orderId,
            outcome: outcome.kind,
            ...(outcome.kind === 'issued' ? { checkNumber: outcome.receipt.registerId, offline: outcome.receipt.offline } : {}),
          },
          'webkassa check',
        );
        return outcome;
      });
    },

    lookup(request: ReceiptRequest): Promise<LookupOutcome> {
      return inCashboxLine(line, () => findByExternalNumber(externalCheckNumberOf(request.key)));
    },

    returnReceipt(original: IssuedReceipt, request: ReceiptRequest, key: string): Promise<RegisterOutcome> {
      return inCashboxLine(line, async () => {
        if (registrationNumber === null) {
          // The return names the cashbox's registration number; it comes with every check answer.
          const sale = await findByExternalNumber(externalCheckNumberOf(request.key));
          if (registrationNumber === null)
            return {
              kind: 'unavailable',
              message: `the cashbox's registration number is not known yet (${sale.kind === 'unknown' ? sale.message : sale.kind})`,
            };
        }
        const built = checkBody(request, identity, OPERATION.saleReturn, externalCheckNumberOf(key));
        if ('problems' in built) return { kind: 'rejected', code: 'invalid_request', message: built.problems.join('; ') };
        const body = {
          ...built.body,
          ReturnBasisDetails: {
            CheckNumber: original.registerId,
            DateTime: original.registerDate,
            Total: request.total,
            RegistrationNumber: registrationNumber,
            IsOffline: original.offline,
          },
        };
        const outcome = await sendCheck(body, 'Webkassa return');
        log.info({ orderId: request.orderId, outcome: outcome.kind, saleCheckNumber: original.registerId }, 'webkassa return');
        return outcome;
      });
    },

    status(): Promise<RegisterStatus> {
      return inCashboxLine(line, async () => {
        const base = { lotteryLeft: null, lastSentAt: null };
        const result = await authed('/api/v4/Cashboxes', {});
        if (result.kind === 'outcome') {
          const message = 'message' in result.outcome ? result.outcome.message : 'authorization failed';
          return { ...base, reachable: result.outcome.kind !== 'unavailable', ready: false, offlineSince, detail: message };
        }
        if (result.kind !== 'answer') return { ...base, reachable: false, ready: false, offlineSince, detail: result.message };
        const error = firstError(result.body);
        const list = cashboxesDataSchema.safeParse(envelopeSchema.safeParse(result.body).data?.Data);
        if (result.status !== 200 || error || !list.success)
          return {
            ...base,
            reachable: true,
            ready: false,
            offlineSince,
            detail: error ? `Webkassa: ${error.text} (error ${error.code})` : `Webkassa cashboxes: ${describeAnswer(result)}`,
          };
        const mine = list.data.List.find((c) => c.UniqueNumber === options.cashboxUniqueNumber);
        if (!mine)
          return {
            ...base,
            reachable: true,
            ready: false,
            offlineSince,
            detail: `cashbox ${options.cashboxUniqueNumber} is not among this account's cashboxes`,
          };
        if (mine.RegistrationNumber) registrationNumber = mine.RegistrationNumber;
        noteOffline(mine.IsOffline ?? undefined);
        if (mine.IsActive === false)
          return {
            ...base,
            reachable: true,
            ready: false,
            offlineSince,
            detail: `cashbox ${options.cashboxUniqueNumber} is not activated`,
          };
        if (offlineSince !== null) {
          const left = offlineSince + offlineLimitMs - options.clock.now();
          const hours = (ms: number) => `${Math.max(0, Math.floor(ms / 3600_000))} h`;
          return {
            ...base,
            reachable: true,
            ready: left > 0,
            offlineSince,
            detail:
              left > 0
                ? `cashbox works offline: ${hours(left)} left of ${hours(offlineLimitMs)}`
                : `cashbox has worked offline longer than ${hours(offlineLimitMs)}: it is blocked until it reaches the fiscal data operator`,
          };
        }
        return { ...base, reachable: true, ready: true, offlineSince, detail: `cashbox ${options.cashboxUniqueNumber} online` };
      });
    },
  };
}
