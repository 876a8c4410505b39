/** What QutPay sends back (docs/providers.md, "QutPay"), checked before use. */
import * as z from 'zod';

export const qutpayInvoiceSchema = z.object({
  id: z.string().startsWith('inv_'),
  status: z.string().min(1),
  amount: z.number().int().nonnegative(),
  externalOrderId: z.string(),
  payUrl: z.string().nullable(),
  /** ISO 8601. */
  expiresAt: z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'an ISO 8601 date'),
  livemode: z.boolean().optional(),
  idempotentReplay: z.boolean().optional(),
  description: z.string().optional(),
  /** GET and cancel carry the invoice's refunds. */
  refunds: z.array(z.object({ id: z.string(), amount: z.number().int().nonnegative(), status: z.string() })).optional(),
});
export type QutpayInvoice = z.infer<typeof qutpayInvoiceSchema>;

export const qutpayRefundSchema = z.object({
  id: z.string().min(1),
  status: z.string().min(1),
});
