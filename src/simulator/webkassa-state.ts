/**
 * A Webkassa-like Kazakh cloud register's rules (its public API v4 as integrators describe it):
 * session tokens, cashboxes that must be activated, shifts that close after 24 hours, checks keyed
 * by ExternalCheckNumber (a duplicate answers error 14 with the existing check), offline mode for a
 * limited time, full returns naming their sale. Errors are `{ Errors: [{ Code, Text }] }` in an
 * HTTP 200 answer. Amounts on the wire are tenge with up to two decimals; held in hundredths.
 */

export interface WebkassaCashboxOptions {
  uniqueNumber: string;
  registrationNumber: string;
  identityNumber?: string;
  /** False: registered but not activated (error 10). Default true. */
  activated?: boolean;
}

export interface WebkassaSimOptions {
  login?: string;
  password?: string;
  /** Sent as `x-api-key` on every call; null: not checked. */
  apiKey?: string | null;
  cashboxes?: WebkassaCashboxOptions[];
  /** The organisation is a VAT payer. Default true. */
  vatPayer?: boolean;
  /** VAT inside prices: 16 % since 2026 (12 % before). Default 16. */
  vatPercent?: number;
  /** How long a cashbox may work offline before it refuses checks (error 18). Default 72 h. */
  offlineLimitMs?: number;
  /** Default 24 h. */
  tokenTtlMs?: number;
  /** A shift longer than this refuses checks until a Z report (error 11). Default 24 h. */
  shiftMaxMs?: number;
  /** Kazakhstan time, UTC+5. */
  utcOffsetMinutes?: number;
}

export const WEBKASSA_SIM_DEFAULTS = Object.freeze({
  login: 'sim@webkassa.test',
  password: 'sim-password',
  apiKey: 'wk_simulator',
  cashbox: Object.freeze({ uniqueNumber: 'SWK00000001', registrationNumber: '000000000001', identityNumber: '1' }),
  vatPercent: 16,
  offlineLimitMs: 72 * 3600_000,
  tokenTtlMs: 24 * 3600_000,
  shiftMaxMs: 24 * 3600_000,
  utcOffsetMinutes: 300,
});

/** Webkassa's error codes used here. */
export const WK = {
  UNKNOWN: -1,
  WRONG_CREDENTIALS: 1,
  SESSION_EXPIRED: 2,
  NOT_AUTHORIZED: 3,
  CASHBOX_NOT_FOUND: 6,
  VALIDATION: 9,
  CASHBOX_NOT_ACTIVATED: 10,
  SHIFT_OVER_24H: 11,
  NO_OPEN_SHIFT: 13,
  DUPLICATE_EXTERNAL_NUMBER: 14,
  CHECK_NOT_FOUND: 16,
  OFFLINE_TOO_LONG: 18,
} as const;

export class WebkassaError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface HeldCheck {
  externalCheckNumber: string;
  checkNumber: string;
  operationType: 2 | 3;
  dateTime: string;
  totalCents: number;
  offline: boolean;
  sentToOfd: boolean;
  shiftNumber: number;
  orderNumber: number;
  /** Sales: set when a full return names it. */
  returnedBy: string | null;
  /** Returns: the sale's check number. */
  returns: string | null;
  body: unknown;
}

export interface Cashbox {
  uniqueNumber: string;
  registrationNumber: string;
  identityNumber: string;
  activated: boolean;
  offlineSince: number | null;
  shift: { number: number; openedAt: number; documents: number } | null;
  lastShiftNumber: number;
  busy: boolean;
  checks: Map<string, HeldCheck>;
}

export function createWebkassaState(clock: { now(): number }, options: WebkassaSimOptions = {}) {
  const d = WEBKASSA_SIM_DEFAULTS;
  const cashboxes = new Map<string, Cashbox>(
    (options.cashboxes ?? [d.cashbox as WebkassaCashboxOptions]).map((c) => [
      c.uniqueNumber,
      {
        uniqueNumber: c.uniqueNumber,
        registrationNumber: c.registrationNumber,
        identityNumber: c.identityNumber ?? '1',
        activated: c.activated ?? true,
        offlineSince: null,
        shift: null,
        lastShiftNumber: 0,
        busy: false,
        checks: new Map(),
      },
    ]),
  );
  const tokens = new Map<string, number>();
  const offsetMs = (options.utcOffsetMinutes ?? d.utcOffsetMinutes) * 60_000;
  const limits = {
    offlineLimitMs: options.offlineLimitMs ?? d.offlineLimitMs,
    tokenTtlMs: options.tokenTtlMs ?? d.tokenTtlMs,
    shiftMaxMs: options.shiftMaxMs ?? d.shiftMaxMs,
  };
  let checkSeq = 0;
  let tokenSeq = 0;

  /** "dd.MM.yyyy HH:mm:ss" in Kazakhstan time. */
  function localDateTime(ms: number): string {
    const iso = new Date(ms + offsetMs).toISOString();
    return `${iso.slice(8, 10)}.${iso.slice(5, 7)}.${iso.slice(0, 4)} ${iso.slice(11, 19)}`;
  }

  function sendQueued(cashbox: Cashbox): void {
    for (const check of cashbox.checks.values()) check.sentToOfd = true;
  }

  return {
    login: options.login ?? d.login,
    password: options.password ?? d.password,
    apiKey: options.apiKey === undefined ? d.apiKey : options.apiKey,
    vatPayer: options.vatPayer ?? true,
    vatPercent: options.vatPercent ?? d.vatPercent,
    limits,
    localDateTime,

    authorize(login: unknown, password: unknown): string {
      if (login !== this.login || password !== this.password) throw new WebkassaError(WK.WRONG_CREDENTIALS, 'wrong login or password');
      tokenSeq += 1;
      const token = `wk${String(tokenSeq).padStart(6, '0')}${(clock.now() % 1_000_000).toString(36)}`;
      tokens.set(token, clock.now() + limits.tokenTtlMs);
      return token;
    },

    requireToken(token: unknown): void {
      const expiresAt = typeof token === 'string' ? tokens.get(token) : undefined;
      if (expiresAt === undefined) throw new WebkassaError(WK.NOT_AUTHORIZED, 'not authorized: a Token from Authorize is required');
      if (expiresAt <= clock.now()) throw new WebkassaError(WK.SESSION_EXPIRED, 'the session has expired: authorize again');
    },

    expireTokens(): void {
      for (const token of tokens.keys()) tokens.set(token, 0);
    },

    cashbox(uniqueNumber: unknown): Cashbox {
      const cashbox = typeof uniqueNumber === 'string' ? cashboxes.get(uniqueNumber) : undefined;
      if (!cashbox) throw new WebkassaError(WK.CASHBOX_NOT_FOUND, `cashbox ${String(uniqueNumber)} not found`);
      return cashbox;
    },

    requireActivated(cashbox: Cashbox): void {
      if (!cashbox.activated) throw new WebkassaError(WK.CASHBOX_NOT_ACTIVATED, `cashbox ${cashbox.uniqueNumber} is not activated`);
    },

    /** The checks a new check must pass on this cashbox now (shift and offline limits); opens a shift when none is. */
    admitCheck(cashbox: Cashbox): void {
      const now = clock.now();
      if (cashbox.offlineSince !== null && now - cashbox.offlineSince > limits.offlineLimitMs)
        throw new WebkassaError(WK.OFFLINE_TOO_LONG, 'the cashbox has worked offline longer than allowed: connect it to the OFD');
      if (cashbox.shift && now - cashbox.shift.openedAt > limits.shiftMaxMs)
        throw new WebkassaError(WK.SHIFT_OVER_24H, 'the shift is open longer than 24 hours: close it with a Z report');
      if (!cashbox.shift) {
        cashbox.lastShiftNumber += 1;
        cashbox.shift = { number: cashbox.lastShiftNumber, openedAt: now, documents: 0 };
      }
    },

    commitCheck(
      cashbox: Cashbox,
      input: { externalCheckNumber: string; operationType: 2 | 3; totalCents: number; returns: HeldCheck | null; body: unknown },
    ): HeldCheck {
      const shift = cashbox.shift;
      if (!shift) throw new Error('commitCheck before admitCheck: no open shift');
      checkSeq += 1;
      shift.documents += 1;
      const offline = cashbox.offlineSince !== null;
      const check: HeldCheck = {
        externalCheckNumber: input.externalCheckNumber,
        checkNumber: String(1_000_000_000 + checkSeq),
        operationType: input.operationType,
        dateTime: localDateTime(clock.now()),
        totalCents: input.totalCents,
        offline,
        sentToOfd: !offline,
        shiftNumber: shift.number,
        orderNumber: shift.documents,
        returnedBy: null,
        returns: input.returns?.checkNumber ?? null,
        body: input.body,
      };
      if (input.returns) input.returns.returnedBy = check.checkNumber;
      cashbox.checks.set(check.externalCheckNumber, check);
      return check;
    },

    findByCheckNumber(cashbox: Cashbox, checkNumber: unknown): HeldCheck | undefined {
      for (const check of cashbox.checks.values()) if (check.checkNumber === checkNumber) return check;
      return undefined;
    },

    zReport(cashbox: Cashbox) {
      if (!cashbox.shift) throw new WebkassaError(WK.NO_OPEN_SHIFT, 'no open shift to close');
      const shift = cashbox.shift;
      cashbox.shift = null;
      return {
        ShiftNumber: shift.number,
        OpenDate: localDateTime(shift.openedAt),
        CloseDate: localDateTime(clock.now()),
        DocumentCount: shift.documents,
      };
    },

    setOffline(cashbox: Cashbox, offline: boolean, since?: number): void {
      if (offline) cashbox.offlineSince = since ?? cashbox.offlineSince ?? clock.now();
      else {
        cashbox.offlineSince = null;
        sendQueued(cashbox);
      }
    },

    all: () => [...cashboxes.values()],
  };
}

export type WebkassaState = ReturnType<typeof createWebkassaState>;
