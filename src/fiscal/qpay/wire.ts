/**
 * QPay's words for eBarimt 3.0 and what the register needs of them (docs/receipts.md, "QPay
 * eBarimt"). The create answer's field names beyond `id` follow QPay's published examples; where
 * they are absent the receipt is still held by QPay (the `id` is what a return needs).
 */
import * as z from 'zod';

export const tokenAnswerSchema = z.object({ access_token: z.string().min(1), expires_in: z.number().optional() }).loose();

/** The rows of `POST /v2/payment/check` this register reads. */
export const paymentCheckSchema = z
  .object({
    rows: z.array(
      z
        .object({
          payment_id: z.union([z.string(), z.number()]),
          payment_status: z.string(),
          payment_amount: z.union([z.number(), z.string()]),
        })
        .loose(),
    ),
  })
  .loose();

export const ebarimtAnswerSchema = z
  .object({
    id: z.string().min(1),
    ebarimt_receipt_id: z.string().nullish(),
    ebarimt_qr_data: z.string().nullish(),
    ebarimt_lottery: z.string().nullish(),
    created_date: z.string().nullish(),
  })
  .loose();

export const errorAnswerSchema = z.object({ error: z.string().min(1), message: z.string().optional() }).loose();

/** Payment words that mean money was taken (and so a receipt is owed), whatever happened after. */
const TAKEN = new Set(['PAID', 'PARTIAL', 'REFUNDED']);

/**
 * The one payment of the invoice the sale was paid with: a row QPay says took money, of the sale's
 * amount. Null when there is none or more than one (a person decides; nothing is filed).
 */
export function paymentOfSale(check: z.infer<typeof paymentCheckSchema>, total: number): string | null {
  const rows = check.rows.filter((r) => TAKEN.has(r.payment_status) && Number(r.payment_amount) === total);
  const [only] = rows;
  return rows.length === 1 && only !== undefined ? String(only.payment_id) : null;
}

/** `expires_in` read either way published clients do: seconds from now, or a Unix time. */
export function tokenExpiry(expiresIn: number | undefined, nowMs: number): number {
  if (expiresIn === undefined) return nowMs + 60_000;
  return expiresIn > 1_000_000_000 ? expiresIn * 1000 : nowMs + expiresIn * 1000;
}
