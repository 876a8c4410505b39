import { prepared, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Outbox } from '../outbox/index.js';
import type { IssuedReceipt, ReceiptRequest, RegisterName } from './types.js';

export type ReceiptState = 'queued' | 'sending' | 'unknown' | 'issued' | 'rejected' | 'canceled';

/** States in which a receipt is still owed: counted as waiting (alarms, /metrics, stop sales). */
export const WAITING_STATES: readonly ReceiptState[] = ['queued', 'sending', 'unknown'];

export interface ReceiptRow {
  id: number;
  order_id: number;
  kind: 'sale' | 'return';
  key: string;
  register: string;
  state: ReceiptState;
  attempts: number;
  next_at: number;
  request_json: string;
  register_id: string | null;
  register_date: string | null;
  offline: number | null;
  created_at: number;
  claimed_at: number | null;
  issued_at: number | null;
  last_error: string | null;
  alarmed_at: number | null;
}

/** The facts of a delivered vend a receipt is made of (the order row's own columns). */
export interface SoldOrder {
  id: number;
  reference: string;
  item_name: string;
  amount: number;
  currency: string;
  provider: string;
  invoice_id: string | null;
}

export interface ReceiptBookSettings {
  register: RegisterName;
  /** The register's calendar; absent: this machine's. */
  timeZone?: string | undefined;
  /** The classification code of every line (eBarimt); null where the market has none. */
  classificationCode: string | null;
}

/**
 * The receipts table (its only writer). `sold` and `refunded` run inside the caller's transaction
 * (the vend's settle, a person's resolve, the refund's completion), so a receipt row exists if and
 * only if the sale or the refund was committed; the request and its key are fixed there.
 */
export interface ReceiptBook {
  /**
   * A delivered vend: its sale receipt is owed. Caller owns the transaction; a second call changes
   * nothing. With `claimedAt` the row is written already claimed for its first call (`sending`,
   * attempt 1): only inside a commit at synchronous=FULL (the vend's settle), so that the claim is as
   * durable as a claim of its own would be. Returns the new row's id, or null when it existed.
   */
  sold(order: SoldOrder, soldAt: number, claimedAt?: number): number | null;
  /** A refund of the order completed: if a sale receipt is owed or issued, its full return is owed. Caller owns the tx. */
  refunded(orderId: number): void;
  /**
   * Rows the worker should look at now (queued or unknown, due), oldest first; only those queued for
   * this register: a receipt owed to another one (the setting changed) is never sent to this one.
   */
  due(now: number, limit: number): ReceiptRow[];
  get(id: number): ReceiptRow | undefined;
  /** The sale receipt of an order, if one is owed or was issued. */
  saleOf(orderId: number): ReceiptRow | undefined;
  /** The full return of an order's sale receipt, if one is owed or was issued. */
  returnOf(orderId: number): ReceiptRow | undefined;
  /** Moves a row, from `from` only; returns whether it moved. */
  move(id: number, from: ReceiptState[], fields: Partial<ReceiptRow>): boolean;
  /** queued → sending with one more attempt. The caller commits it durably before the call. */
  claim(id: number, now: number): boolean;
  /** The register answers again: every receipt waiting for it is due now (the backlog drains at its pace). */
  expedite(now: number): number;
  /** Crash recovery: a receipt that was being sent has an unknown outcome (asked about, never re-sent blindly). */
  recover(): number;
  /**
   * Receipts still owed, and the creation time of the oldest. `oldestForRegisterAt` leaves out the
   * unknown receipts already handed to a person (alarmed): what the register itself has not taken.
   */
  waiting(): { count: number; unknown: number; oldestAt: number | null; oldestForRegisterAt: number | null };
  /** Unknown receipts claimed before `before` that have no alarm yet. */
  unknownSince(before: number): ReceiptRow[];
  /** Sale receipts per day, measured over the last `days` days of this machine's receipts (0 with none). */
  salesPerDay(now: number, days: number): number;
  /** The issued receipt as the register returned it, without what was never stored (QR, lottery). */
  issuedOf(row: ReceiptRow): IssuedReceipt;
}

/** YYYY-MM-DD of `ms` in `timeZone` (the machine's when absent). */
export function dayIn(ms: number, timeZone: string | undefined): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ms);
}

export function createReceiptBook(deps: { db: Db; clock: Clock; outbox: Outbox }, settings: ReceiptBookSettings): ReceiptBook {
  const { db, clock, outbox } = deps;
  const insert = (
    row: Omit<
      ReceiptRow,
      'id' | 'attempts' | 'register_id' | 'register_date' | 'offline' | 'claimed_at' | 'issued_at' | 'last_error' | 'alarmed_at'
    > &
      Partial<Pick<ReceiptRow, 'attempts' | 'claimed_at'>>,
  ): number | null => {
    const result = prepared(
      db,
      `INSERT INTO receipts (order_id, kind, key, register, state, next_at, request_json, created_at, attempts, claimed_at)
       VALUES (@order_id, @kind, @key, @register, @state, @next_at, @request_json, @created_at, @attempts, @claimed_at)
       ON CONFLICT DO NOTHING`,
    ).run({ attempts: 0, claimed_at: null, ...row });
    return result.changes === 1 ? Number(result.lastInsertRowid) : null;
  };
  const byOrder = (orderId: number, kind: 'sale' | 'return') =>
    prepared(db, 'SELECT * FROM receipts WHERE order_id = ? AND kind = ?').get(orderId, kind) as ReceiptRow | undefined;

  function requestOf(order: SoldOrder, soldAt: number): ReceiptRequest {
    return {
      key: `${order.reference}-sale`,
      orderId: order.reference,
      saleDate: dayIn(soldAt, settings.timeZone),
      soldAt,
      total: order.amount,
      currency: order.currency,
      lines: [{ name: order.item_name, classificationCode: settings.classificationCode, unit: null, quantity: 1, unitPrice: order.amount }],
      payment: { provider: order.provider, invoiceId: order.invoice_id ?? '' },
    };
  }

  return {
    sold(order, soldAt, claimedAt) {
      const request = requestOf(order, soldAt);
      const now = clock.now();
      const added = insert({
        order_id: order.id,
        kind: 'sale',
        key: request.key,
        register: settings.register,
        state: claimedAt === undefined ? 'queued' : 'sending',
        next_at: now,
        request_json: JSON.stringify(request),
        created_at: now,
        ...(claimedAt === undefined ? {} : { attempts: 1, claimed_at: claimedAt }),
      });
      if (added !== null) outbox.event('receipt.queued', { orderId: order.id, reference: order.reference, kind: 'sale', key: request.key });
      return added;
    },

    refunded(orderId) {
      const sale = byOrder(orderId, 'sale');
      if (!sale || sale.state === 'rejected' || sale.state === 'canceled') return;
      const saleRequest = JSON.parse(sale.request_json) as ReceiptRequest;
      const key = saleRequest.key.replace(/-sale$/, '-return');
      const now = clock.now();
      const added = insert({
        order_id: orderId,
        kind: 'return',
        key,
        register: sale.register,
        state: 'queued',
        next_at: now,
        // The return's request is the sale's, under the return's own key (a full return).
        request_json: JSON.stringify({ ...saleRequest, key, saleDate: dayIn(now, settings.timeZone), soldAt: now }),
        created_at: now,
      });
      if (added !== null) outbox.event('receipt.queued', { orderId, reference: saleRequest.orderId, kind: 'return', key });
    },

    due(now, limit) {
      return prepared(
        db,
        "SELECT * FROM receipts WHERE state IN ('queued', 'unknown') AND next_at <= ? AND register = ? ORDER BY next_at, id LIMIT CAST(? AS INTEGER)",
      ).all(now, settings.register, limit) as ReceiptRow[];
    },

    get: (id) => prepared(db, 'SELECT * FROM receipts WHERE id = ?').get(id) as ReceiptRow | undefined,
    saleOf: (orderId) => byOrder(orderId, 'sale'),
    returnOf: (orderId) => byOrder(orderId, 'return'),

    move(id, from, fields) {
      const keys = Object.keys(fields);
      const set = keys.map((k) => `${k} = @${k}`).join(', ');
      const states = from.map((s) => `'${s}'`).join(', ');
      return prepared(db, `UPDATE receipts SET ${set} WHERE id = @id AND state IN (${states})`).run({ ...fields, id }).changes === 1;
    },

    claim(id, now) {
      return (
        prepared(
          db,
          "UPDATE receipts SET state = 'sending', attempts = attempts + 1, claimed_at = ? WHERE id = ? AND state = 'queued'",
        ).run(now, id).changes === 1
      );
    },

    expedite(now) {
      return prepared(db, "UPDATE receipts SET next_at = ? WHERE state IN ('queued', 'unknown') AND next_at > ?").run(now, now).changes;
    },

    recover() {
      return prepared(
        db,
        "UPDATE receipts SET state = 'unknown', next_at = 0, last_error = 'the service stopped while the receipt was being sent' WHERE state = 'sending'",
      ).run().changes;
    },

    waiting() {
      const row = prepared(
        db,
        `SELECT count(*) AS n, sum(state = 'unknown') AS u, min(created_at) AS oldest,
                min(CASE WHEN state = 'unknown' AND alarmed_at IS NOT NULL THEN NULL ELSE created_at END) AS owed
         FROM receipts WHERE state IN ('queued', 'sending', 'unknown') AND register = ?`,
      ).get(settings.register) as { n: number; u: number | null; oldest: number | null; owed: number | null };
      return { count: row.n, unknown: row.u ?? 0, oldestAt: row.oldest, oldestForRegisterAt: row.owed };
    },

    unknownSince(before) {
      return prepared(
        db,
        "SELECT * FROM receipts WHERE state = 'unknown' AND alarmed_at IS NULL AND coalesce(claimed_at, created_at) <= ? AND register = ?",
      ).all(before, settings.register) as ReceiptRow[];
    },

    salesPerDay(now, days) {
      const since = now - days * 86_400_000;
      const row = prepared(
        db,
        "SELECT count(*) AS n, min(created_at) AS first FROM receipts INDEXED BY receipts_created_at WHERE kind = 'sale' AND created_at >= ?",
      ).get(since) as { n: number; first: number | null };
      if (row.n === 0 || row.first === null) return 0;
      // A machine installed two days ago has two days of sales, not seven.
      const covered = Math.min(days, Math.max(1, (now - row.first) / 86_400_000));
      return row.n / covered;
    },

    issuedOf(row) {
      return {
        registerId: row.register_id ?? '',
        registerDate: row.register_date ?? '',
        qrData: null,
        lottery: null,
        offline: row.offline === 1,
      };
    },
  };
}
