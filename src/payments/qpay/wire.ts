/**
 * What QPay v2 sends back (docs/providers.md, "QPay"), checked before use. Only the fields the
 * adapter reads are required; QPay's answers carry more, and they pass through unread.
 */
import * as z from 'zod';

export const qpayTokenSchema = z.object({
  access_token: z.string().min(1),
  /** A lifetime in seconds, or (as several published clients read it) a Unix time: see token.ts. */
  expires_in: z.number().finite().positive(),
  refresh_token: z.string().min(1).optional(),
  refresh_expires_in: z.number().finite().positive().optional(),
});
export type QpayToken = z.infer<typeof qpayTokenSchema>;

const deepLinkSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  logo: z.string().optional(),
  link: z.string().min(1),
});

export const qpayCreatedSchema = z.object({
  invoice_id: z.string().min(1),
  qr_text: z.string().min(1),
  qr_image: z.string().optional(),
  qPay_shortUrl: z.string().optional(),
  urls: z.array(deepLinkSchema).optional(),
});
export type QpayCreated = z.infer<typeof qpayCreatedSchema>;

/**
 * `GET /v2/invoice/{id}`. The facts name the endpoint, not its fields: the adapter reads the ones
 * below where present and never decides money from them (that is payment/check's job).
 */
export const qpayInvoiceSchema = z.object({
  invoice_id: z.string().min(1),
  invoice_status: z.string().min(1),
  sender_invoice_no: z.string().optional(),
  amount: z.number().nonnegative().optional(),
  total_amount: z.number().nonnegative().optional(),
  invoice_description: z.string().optional(),
  callback_url: z.string().optional(),
});
export type QpayInvoice = z.infer<typeof qpayInvoiceSchema>;

export const qpayPaymentRowSchema = z.object({
  payment_id: z.string().min(1),
  payment_status: z.string().min(1),
  payment_amount: z.coerce.number().nonnegative(),
  payment_currency: z.string().optional(),
  payment_wallet: z.string().optional(),
});
export type QpayPaymentRow = z.infer<typeof qpayPaymentRowSchema>;

export const qpayPaymentCheckSchema = z.object({
  count: z.number().int().nonnegative(),
  paid_amount: z.coerce.number().nonnegative().optional(),
  rows: z.array(qpayPaymentRowSchema),
});
export type QpayPaymentCheck = z.infer<typeof qpayPaymentCheckSchema>;
