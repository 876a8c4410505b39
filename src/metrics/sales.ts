/** Counts and sums (the currency's units) by kind, today and in total. */
export interface SalesSnapshot {
  currency: string;
  today: Record<string, { count: number; amount: number }>;
  total: Record<string, { count: number; amount: number }>;
}

type Family = (name: string, help: string, type: 'gauge' | 'counter', samples: [Record<string, string>, number][]) => void;

const KINDS = ['paid', 'vended', 'refunded'] as const;

/**
 * The sales figures as Prometheus families: the totals are counters (`_total`), today's are gauges
 * (they fall back to 0 at local midnight). Amounts are in the currency's units, named by its label.
 */
export function salesFamilies(family: Family, sales: SalesSnapshot): void {
  const { currency } = sales;
  const count = (figures: typeof sales.total) =>
    KINDS.map((state): [Record<string, string>, number] => [{ state }, figures[state]?.count ?? 0]);
  const amount = (figures: typeof sales.total) =>
    KINDS.map((state): [Record<string, string>, number] => [{ state, currency }, figures[state]?.amount ?? 0]);
  const note = 'paid: payment seen; vended: goods delivered; refunded: money returned';
  family('vendgate_sales_total', `Sales by state over the orders the database holds (${note}).`, 'counter', count(sales.total));
  family(
    'vendgate_sales_amount_total',
    `Sum of those sales in the currency's units (refunded: the amount returned), over the orders the database holds.`,
    'counter',
    amount(sales.total),
  );
  family('vendgate_sales_today', `Sales by state since local midnight (${note}).`, 'gauge', count(sales.today));
  family(
    'vendgate_sales_today_amount',
    "Sum of today's sales in the currency's units (refunded: the amount returned).",
    'gauge',
    amount(sales.today),
  );
}
