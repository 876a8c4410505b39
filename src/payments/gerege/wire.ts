/**
 * What Gerege sends back (docs/providers.md, "Gerege"), checked before use: a missing field is a
 * `malformed` ProviderError, never an `undefined` travelling into the ledger.
 */
import * as z from 'zod';

export const geregeIntentSchema = z.object({
  id: z.string().startsWith('pi_'),
  status: z.string().min(1),
  amount: z.number().int().nonnegative(),
  currency: z.string().min(1),
  reference: z.string(),
  livemode: z.boolean(),
  // null once an intent is no longer payable; the QR is then irrelevant.
  pay_url: z.string().nullable(),
  /** Unix seconds. */
  expires_at: z.number().finite(),
  /** Unix seconds. */
  created: z.number().finite().optional(),
  description: z.string().optional(),
  /** Assumed (the provider's documentation is silent): the sum of the intent's succeeded refunds. */
  amount_refunded: z.number().int().nonnegative().optional(),
});
export type GeregeIntent = z.infer<typeof geregeIntentSchema>;

export const geregeRefundSchema = z.object({
  id: z.string().min(1),
  status: z.string().min(1),
});

export const geregeTokenSchema = z.object({
  access_token: z.string().min(1),
  /** Seconds. */
  expires_in: z.number().positive(),
});

export const geregeEventListSchema = z.object({
  data: z.array(z.unknown()),
  has_more: z.boolean(),
});
