import { prepared, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import { toIso } from '../util/clock.js';
import { randomBytes } from 'node:crypto';
import { canTransition, type OrderState } from './state.js';
import { ANY_APP_SCHEME, safeAppLinks, type AppLink } from './app-links.js';

export interface OrderRow {
  id: number;
  reference: string;
  attempt: number;
  idempotency_key: string;
  source: string;
  slot: string | null;
  item_name: string;
  amount: number;
  currency: string;
  livemode: number;
  provider: string;
  capture_mode: 'automatic' | 'manual';
  state: OrderState;
  invoice_id: string | null;
  pay_url: string | null;
  /** JSON of the provider's bank-app deep links (orders/app-links.ts), or null. Display only. */
  app_links: string | null;
  expires_at: number | null;
  error_code: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
  paid_at: number | null;
  vended_at: number | null;
  refunded_at: number | null;
  closed_at: number | null;
  /** JSON of the attempt's create request, fixed with its key (see `CreateRequestFields`). */
  create_request: string | null;
}

/** What an attempt's create request carries besides the order's own columns; fixed with its key. */
export interface CreateRequestFields {
  description: string;
  expiresInSec: number;
  captureMode: 'automatic' | 'manual';
}

export interface NewOrder {
  request: CreateRequestFields;
  source: string;
  slot: string | null;
  itemName: string;
  amount: number;
  currency: string;
  livemode: boolean;
  provider: string;
  captureMode: 'automatic' | 'manual';
}

/** `<reference>-pay` for the first attempt, `<reference>-pay-<n>` after (docs/providers.md: keys come from the order). */
export function idempotencyKeyFor(reference: string, attempt: number): string {
  return attempt <= 1 ? `${reference}-pay` : `${reference}-pay-${attempt}`;
}

/**
 * `<device.id>-<db>-<id>-<nonce>`. The db part keeps a re-imaged device from reusing its earlier
 * keys; the nonce, minted per order and written with it before any call, keeps a database restored
 * from a backup (or an SD card cloned onto a second machine) from reusing them: order ids restart
 * there, nonces do not repeat. Stable across retries because it is stored, not recomputed.
 */
export function referenceFor(deviceId: string, dbId: string, orderId: number, nonce: string): string {
  return `${deviceId}-${dbId}-${orderId}-${nonce}`;
}

/** 8 hex characters (32 bits): two orders with the same id in two lineages collide once in 4 billion. */
export function newOrderNonce(): string {
  return randomBytes(4).toString('hex');
}

/** Timestamp columns a transition into a state sets, so reports need not scan the history. */
const STAMPS: Partial<Record<OrderState, keyof OrderRow>> = {
  paid: 'paid_at',
  authorized: 'paid_at',
  vended: 'vended_at',
  refunded: 'refunded_at',
  canceled: 'closed_at',
  expired: 'closed_at',
  failed: 'closed_at',
};

export class TransitionRefused extends Error {
  constructor(
    readonly orderId: number,
    readonly from: OrderState,
    readonly to: OrderState,
  ) {
    super(`order ${orderId}: ${from} → ${to} is not allowed`);
    this.name = 'TransitionRefused';
  }
}

/** An order's history line, oldest first. */
export interface OrderHistoryEntry {
  /** ISO time of the transition. */
  at: string;
  from: string | null;
  to: string;
  reason: string;
}

/** Which orders `list()` returns: newest first, `from`/`to` on the creation time (ms, `to` excluded). */
export interface OrderListFilter {
  state?: string;
  from?: number;
  to?: number;
  limit?: number;
}

/**
 * The SQL of `orders`, `order_invoices` and `order_history`: the only way another folder reads or
 * moves an order row. Callers own the transaction (writes go inside theirs).
 */
export interface OrderRepository {
  /** Inserts the order with its reference and idempotency key in one statement pair (caller: durably). */
  insert(order: NewOrder, deviceId: string, dbId: string, nonce?: string): OrderRow;
  get(id: number): OrderRow | undefined;
  /** The order an invoice belongs to (any attempt), with the attempt the invoice was made for. */
  getByInvoice(invoiceId: string): (OrderRow & { invoice_attempt: number }) | undefined;
  /** Records the invoice the provider returned for the order's current attempt. */
  /** `windowOpenedAt`: when the customer's window opened on this device's clock (orders/window.ts); default now. */
  attachInvoice(
    id: number,
    invoice: { id: string; payUrl: string; expiresAt: number; appLinks?: AppLink[] },
    windowOpenedAt?: number,
  ): void;
  /**
   * A new attempt for an order still in `creating` (its invoice answer was not one it made): a
   * new key, derived like the first, and the request fixed again. Caller: durably.
   */
  newAttempt(id: number, request: CreateRequestFields): OrderRow;
  /** The provider gave its final answer on the invoice: it is no longer followed. */
  markInvoiceSettled(invoiceId: string, at: number): void;
  /** Invoices without a final answer from the provider yet, with what the poller needs. */
  unsettledInvoices(): { invoice_id: string; order_id: number; state: OrderState; current: number; expires_at: number | null }[];
  /**
   * Moves the order forward and writes its history line. Refuses (throws) a transition the state
   * table does not allow; returns false when the order is no longer in `from` (someone else moved
   * it first).
   */
  transition(id: number, from: OrderState, to: OrderState, reason: string, extra?: { errorCode?: string; errorMessage?: string }): boolean;
  /** Orders newest first (see OrderListFilter). */
  list(filter?: OrderListFilter): OrderRow[];
  /** Orders in any of these states, oldest first. */
  inStates(states: readonly OrderState[]): OrderRow[];
  /** How many orders are in each state (states with none are absent). */
  countByState(): { state: string; n: number }[];
  /** The newest order, if any. */
  latest(): OrderRow | undefined;
  /** The order's transitions, oldest first. */
  history(id: number): OrderHistoryEntry[];
  /**
   * A history line that moves nothing (from and to are the current state), e.g. the audit of an
   * operator's command. False when there is no such order.
   */
  note(id: number, reason: string): boolean;
}

/** The SQL of the orders tables. Callers own the transaction. */
export function createOrderRepository(deps: { db: Db; clock: Clock }): OrderRepository {
  const { db, clock } = deps;
  const byId = db.prepare('SELECT * FROM orders WHERE id = ?');
  const byInvoice = db.prepare(
    'SELECT o.*, oi.attempt AS invoice_attempt FROM order_invoices oi JOIN orders o ON o.id = oi.order_id WHERE oi.invoice_id = ?',
  );
  const history = db.prepare('INSERT INTO order_history (order_id, at, from_state, to_state, reason) VALUES (?, ?, ?, ?, ?)');

  return {
    /** Inserts the order with its reference and idempotency key in one statement pair (caller: durably). */
    insert(order: NewOrder, deviceId: string, dbId: string, nonce = newOrderNonce()): OrderRow {
      const now = clock.now();
      // The id is only known after the insert; the reference and key derive from it, so write a
      // placeholder that is unique by construction and replace it in the same transaction.
      const placeholder = `pending-${now}-${Math.random()}`;
      const { lastInsertRowid } = prepared(
        db,
        `INSERT INTO orders (reference, attempt, idempotency_key, source, slot, item_name, amount, currency, livemode,
           provider, capture_mode, state, created_at, updated_at)
         VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'creating', ?, ?)`,
      ).run(
        placeholder,
        placeholder,
        order.source,
        order.slot,
        order.itemName,
        order.amount,
        order.currency,
        order.livemode ? 1 : 0,
        order.provider,
        order.captureMode,
        now,
        now,
      );
      const id = Number(lastInsertRowid);
      const reference = referenceFor(deviceId, dbId, id, nonce);
      prepared(db, 'UPDATE orders SET reference = ?, idempotency_key = ?, create_request = ? WHERE id = ?').run(
        reference,
        idempotencyKeyFor(reference, 1),
        JSON.stringify(order.request),
        id,
      );
      history.run(id, now, null, 'creating', `order from ${order.source}`);
      return byId.get(id) as OrderRow;
    },

    get(id: number): OrderRow | undefined {
      return byId.get(id) as OrderRow | undefined;
    },

    /** The order an invoice belongs to (any attempt), with the attempt the invoice was made for. */
    getByInvoice(invoiceId: string): (OrderRow & { invoice_attempt: number }) | undefined {
      return byInvoice.get(invoiceId) as (OrderRow & { invoice_attempt: number }) | undefined;
    },

    /** Records the invoice the provider returned for the order's current attempt. */
    attachInvoice(
      id: number,
      invoice: { id: string; payUrl: string; expiresAt: number; appLinks?: AppLink[] },
      windowOpenedAt?: number,
    ): void {
      const order = byId.get(id) as OrderRow;
      prepared(
        db,
        'INSERT INTO order_invoices (invoice_id, order_id, attempt, created_at, window_opened_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
      ).run(invoice.id, id, order.attempt, clock.now(), windowOpenedAt ?? clock.now());
      const links = safeAppLinks(invoice.appLinks ?? [], ANY_APP_SCHEME);
      prepared(db, 'UPDATE orders SET invoice_id = ?, pay_url = ?, expires_at = ?, app_links = ?, updated_at = ? WHERE id = ?').run(
        invoice.id,
        invoice.payUrl,
        invoice.expiresAt,
        links.length > 0 ? JSON.stringify(links) : null,
        clock.now(),
        id,
      );
    },

    /**
     * A new attempt for an order still in `creating` (its invoice answer was not one it made): a
     * new key, derived like the first, and the request fixed again. Caller: durably.
     */
    newAttempt(id: number, request: CreateRequestFields): OrderRow {
      const order = byId.get(id) as OrderRow;
      const attempt = order.attempt + 1;
      prepared(
        db,
        "UPDATE orders SET attempt = ?, idempotency_key = ?, create_request = ?, updated_at = ? WHERE id = ? AND state = 'creating'",
      ).run(attempt, idempotencyKeyFor(order.reference, attempt), JSON.stringify(request), clock.now(), id);
      history.run(id, clock.now(), 'creating', 'creating', `attempt ${attempt}: a new key`);
      return byId.get(id) as OrderRow;
    },

    /** The provider gave its final answer on the invoice: it is no longer followed. */
    markInvoiceSettled(invoiceId: string, at: number): void {
      prepared(db, 'UPDATE order_invoices SET settled_at = ? WHERE invoice_id = ? AND settled_at IS NULL').run(at, invoiceId);
    },

    /** Invoices without a final answer from the provider yet, with what the poller needs. */
    unsettledInvoices(): { invoice_id: string; order_id: number; state: OrderState; current: number; expires_at: number | null }[] {
      return prepared(
        db,
        `SELECT oi.invoice_id, o.id AS order_id, o.state, (o.invoice_id = oi.invoice_id) AS current, o.expires_at
           FROM order_invoices oi JOIN orders o ON o.id = oi.order_id
          WHERE oi.settled_at IS NULL ORDER BY oi.created_at`,
      ).all() as { invoice_id: string; order_id: number; state: OrderState; current: number; expires_at: number | null }[];
    },

    /**
     * Moves the order forward. Refuses (throws) a transition the state table does not allow; returns
     * false when the order is no longer in `from` (someone else moved it first).
     */
    transition(
      id: number,
      from: OrderState,
      to: OrderState,
      reason: string,
      extra: { errorCode?: string; errorMessage?: string } = {},
    ): boolean {
      if (!canTransition(from, to)) throw new TransitionRefused(id, from, to);
      const now = clock.now();
      const stamp = STAMPS[to];
      const result = prepared(
        db,
        `UPDATE orders SET state = ?, updated_at = ?, error_code = coalesce(?, error_code), error_message = coalesce(?, error_message)
         ${stamp ? `, ${stamp} = coalesce(${stamp}, ?)` : ''} WHERE id = ? AND state = ?`,
      ).run(...[to, now, extra.errorCode ?? null, extra.errorMessage ?? null, ...(stamp ? [now] : []), id, from]);
      if (result.changes === 0) return false;
      history.run(id, now, from, to, reason);
      return true;
    },

    list(filter: { state?: string; from?: number; to?: number; limit?: number } = {}): OrderRow[] {
      return prepared(
        db,
        `SELECT * FROM orders WHERE (? IS NULL OR state = ?) AND (? IS NULL OR created_at >= ?) AND (? IS NULL OR created_at < ?)
         ORDER BY id DESC LIMIT CAST(? AS INTEGER)`,
      ).all(
        filter.state ?? null,
        filter.state ?? null,
        filter.from ?? null,
        filter.from ?? null,
        filter.to ?? null,
        filter.to ?? null,
        filter.limit ?? 1_000_000,
      ) as OrderRow[];
    },

    inStates(states: readonly OrderState[]): OrderRow[] {
      return prepared(db, `SELECT * FROM orders WHERE state IN (${states.map(() => '?').join(',')}) ORDER BY id`).all(
        ...states,
      ) as OrderRow[];
    },

    countByState(): { state: string; n: number }[] {
      return prepared(db, 'SELECT state, count(*) AS n FROM orders GROUP BY state').all() as { state: string; n: number }[];
    },

    latest(): OrderRow | undefined {
      return prepared(db, 'SELECT * FROM orders ORDER BY id DESC LIMIT 1').get() as OrderRow | undefined;
    },

    history(id: number): { at: string; from: string | null; to: string; reason: string }[] {
      const rows = prepared(db, 'SELECT at, from_state, to_state, reason FROM order_history WHERE order_id = ? ORDER BY rowid').all(id) as {
        at: number;
        from_state: string | null;
        to_state: string;
        reason: string;
      }[];
      return rows.map((r) => ({ at: toIso(r.at)!, from: r.from_state, to: r.to_state, reason: r.reason }));
    },

    note(id: number, reason: string): boolean {
      const order = byId.get(id) as OrderRow | undefined;
      if (!order) return false;
      history.run(id, clock.now(), order.state, order.state, reason);
      return true;
    },
  };
}
