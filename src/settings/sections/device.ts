import { z } from 'zod';

export const catalogItemSchema = z.object({
  slot: z.string().min(1).max(16).regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ only'),
  name: z.string().min(1).max(80),
  /** In the currency's smallest unit the provider charges in (MNT and KZT have none in practice). */
  price: z.number().int().positive(),
});

export const deviceSchema = z
  .object({
    id: z.string().min(1).max(32).regex(/^[a-z0-9][a-z0-9-]*$/, 'lower-case letters, digits and - only (it goes into MQTT topics and order references)'),
    mode: z.enum(['vending', 'turnstile']).default('vending'),
    livemode: z.boolean().default(false),
    currency: z.string().regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as MNT or KZT').default('MNT'),
    catalog: z.array(catalogItemSchema).default([]),
    /** Turnstile mode: the price of one pass. */
    fare: z.number().int().positive().optional(),
  })
  .superRefine((device, ctx) => {
    if (device.mode === 'vending' && device.catalog.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['catalog'], message: 'vending mode needs at least one catalog item {slot, name, price}' });
    }
    if (device.mode === 'turnstile' && device.fare === undefined) {
      ctx.addIssue({ code: 'custom', path: ['fare'], message: 'turnstile mode needs a fare (price of one pass)' });
    }
    const seen = new Set<string>();
    device.catalog.forEach((item, index) => {
      if (seen.has(item.slot)) ctx.addIssue({ code: 'custom', path: ['catalog', index, 'slot'], message: `slot "${item.slot}" appears twice` });
      seen.add(item.slot);
    });
  });
