import type Database from 'better-sqlite3';

/** How many sales, and their sum in the currency's units (device.currency). */
export interface SalesFigure {
  count: number;
  amount: number;
}

/** Paid, vended and refunded sales: today (since local midnight) and over every order the database holds. */
export interface SalesFigures {
  currency: string;
  /** Local midnight of the device's day (ISO): where "today" starts. */
  todaySince: string;
  today: Record<SaleKind, SalesFigure>;
  total: Record<SaleKind, SalesFigure>;
}

export type SaleKind = 'paid' | 'vended' | 'refunded';

/**
 * The operator's sales figures, read from the orders and their refunds (what the money path
 * recorded, not a separate tally that could drift from it). A sale is paid when its payment was
 * seen, vended when the goods left, refunded when a refund to the customer succeeded (its amount:
 * what went back). Totals cover what the database holds: storage.retentionDays prunes old orders.
 */
export function salesFigures(db: Database.Database, currency: string, now: number): SalesFigures {
  const midnight = new Date(now);
  midnight.setHours(0, 0, 0, 0);
  const since = midnight.getTime();
  const orders = (column: 'paid_at' | 'vended_at', from: number): SalesFigure =>
    db
      .prepare(
        `SELECT COUNT(*) AS count, COALESCE(SUM(amount), 0) AS amount FROM orders WHERE ${column} IS NOT NULL AND ${column} >= ? AND currency = ?`,
      )
      .get(from, currency) as SalesFigure;
  const refunded = (from: number): SalesFigure =>
    db
      .prepare(
        `SELECT COUNT(DISTINCT r.order_id) AS count, COALESCE(SUM(r.amount), 0) AS amount
           FROM refunds r JOIN orders o ON o.id = r.order_id
          WHERE r.state = 'succeeded' AND r.updated_at >= ? AND o.currency = ?`,
      )
      .get(from, currency) as SalesFigure;
  const figures = (from: number) => ({ paid: orders('paid_at', from), vended: orders('vended_at', from), refunded: refunded(from) });
  return { currency, todaySince: midnight.toISOString(), today: figures(since), total: figures(0) };
}
