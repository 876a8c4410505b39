/**
 * The contract between the core and every fiscal register (eBarimt PosAPI 3.x, eBarimt through
 * QPay, a Kazakh cloud register, the demo's sandbox). Adapters translate register words into these types; they never
 * decide anything about receipts, orders or vends: the fiscal worker does.
 *
 * Money is integer minor units throughout (tögrög and tenge have none in practice, but the unit is
 * the same as the payment's amount).
 */

export type RegisterName = 'sandbox' | 'ebarimt' | 'webkassa' | 'qpay';

/** One line of a sale: the item the vend delivered. Unit price and amount include every tax. */
export interface ReceiptLine {
  /** The catalog's item name, as the customer saw it. */
  name: string;
  /** The tax system's classification code of the item (eBarimt: 7 digits); null where the market has none. */
  classificationCode: string | null;
  /** Unit of measure code where the register wants one (eBarimt: the unit name or code); null: the adapter's default. */
  unit: string | null;
  quantity: number;
  /** Minor units, tax included. */
  unitPrice: number;
}

/** A sale to register: fixed when the receipt row is claimed, identical on every retry. */
export interface ReceiptRequest {
  /**
   * The receipt's idempotency key, fixed at the claim and sent on every attempt: Webkassa's
   * ExternalCheckNumber; for eBarimt the source of the day-unique billIdSuffix.
   */
  key: string;
  /** Our order id, for the register's own records and for a person reading both. */
  orderId: string;
  /** The day the sale belongs to (YYYY-MM-DD, the register's time zone): where a key is unique per day. */
  saleDate: string;
  /** ms since epoch: when the vend delivered. */
  soldAt: number;
  /** Minor units, tax included; equals the sum of the lines. */
  total: number;
  currency: string;
  lines: ReceiptLine[];
  /** How the customer paid: a QR wallet through the payment provider. */
  payment: { provider: string; invoiceId: string };
}

/** What a register answers for a receipt it holds. */
export interface IssuedReceipt {
  /** The register's receipt id (eBarimt: 33 digits; Webkassa: its check number). */
  registerId: string;
  /** The register's own date/time of the receipt, as it wants it back for a return. */
  registerDate: string;
  /** What the screen's QR encodes. Shown, never stored beyond what showing it needs. */
  qrData: string | null;
  /** eBarimt's lottery number; null where there is none (Kazakhstan) or none are left. */
  lottery: string | null;
  /** The register took it offline (queued for the tax system / fiscal data operator). */
  offline: boolean;
}

/**
 * The outcome of one issue or return call.
 * - `issued`: the register holds it; done.
 * - `rejected`: the register refused it and certainly holds nothing (bad request, not activated):
 *   a person must look; never retried as it is.
 * - `unavailable`: the call certainly did not reach the register (connection refused, DNS, 503
 *   before any work): safe to retry with the same key.
 * - `unknown`: the register may have committed (timeout after sending, connection reset, 5xx
 *   mid-work): reconcile with `lookup` before any retry.
 * - `blocked`: the register answers but refuses every receipt until a person acts on the register
 *   itself (a lapsed session token, wrong credentials or API key, a cashbox or PosAPI that is not
 *   activated), and certainly filed nothing. A condition of the register, not of this receipt: the
 *   receipt waits and is sent again (same key) once the register takes receipts. `message` says
 *   what the person must do; it never holds a secret.
 */
export type RegisterOutcome =
  | { kind: 'issued'; receipt: IssuedReceipt }
  | { kind: 'rejected'; code: string; message: string }
  | { kind: 'unavailable'; message: string; retryAfterMs?: number }
  | { kind: 'unknown'; message: string }
  | { kind: 'blocked'; message: string };

/**
 * What a register says when asked whether it holds a receipt under a key.
 * - `found`: it does (the receipt is returned as it holds it).
 * - `absent`: it certainly does not: issuing again with the same key makes one receipt.
 * - `unknown`: it cannot tell now (unreachable, an error): try later; never issue again meanwhile.
 * - `cannot_tell`: the register has no way to be asked (eBarimt's PosAPI). Says nothing about
 *   whether the register answers: the receipt waits for a person (`vendgate receipt`), never
 *   issued again.
 * - `blocked`: the register refuses to answer until a person acts on it (see RegisterOutcome).
 */
export type LookupOutcome =
  | { kind: 'found'; receipt: IssuedReceipt }
  | { kind: 'absent' }
  | { kind: 'unknown'; message: string }
  | { kind: 'cannot_tell'; message: string }
  | { kind: 'blocked'; message: string };

/** The register's health, for alarms, the selftest, telemetry and /metrics. */
export interface RegisterStatus {
  reachable: boolean;
  /** False before the register is activated/configured for this merchant ("not configured"). */
  ready: boolean;
  /** eBarimt: lottery numbers left; null where the register has none. */
  lotteryLeft: number | null;
  /** ms since epoch the register last handed its queue to the tax system; null when unknown. */
  lastSentAt: number | null;
  /** ms since epoch the register went offline (Kazakhstan's offline mode); null when online. */
  offlineSince: number | null;
  detail: string;
}

export interface FiscalRegister {
  readonly name: RegisterName;
  /** Issue the sale's receipt. Same request (same key) on every retry. */
  issue(request: ReceiptRequest): Promise<RegisterOutcome>;
  /** Does the register hold a receipt under this request's key? Asked before any retry after `unknown`. */
  lookup(request: ReceiptRequest): Promise<LookupOutcome>;
  /** A full return of a receipt the register issued (a refund of a receipted sale). `key` is the return's own key. */
  returnReceipt(original: IssuedReceipt, request: ReceiptRequest, key: string): Promise<RegisterOutcome>;
  /** Health and counters. Never throws: an unreachable register is `reachable: false`. */
  status(): Promise<RegisterStatus>;
  /** Ask the register to send what it queued offline now, where it can (eBarimt GET /rest/sendData). */
  flush?(): Promise<void>;
  close?(): Promise<void>;
}
