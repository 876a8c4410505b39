import * as z from 'zod';
import { intIn } from './number.js';

/** The kiosk's languages; a catalog item may name itself in each. */
export const KIOSK_LANGUAGES = ['mn', 'kk', 'ru', 'en'] as const;

export const catalogItemSchema = () =>
  z
    .object({
      slot: z
        .string()
        .min(1)
        .max(16)
        .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ only'),
      /** The name in the invoice and wherever no translation is given. */
      name: z.string().min(1).max(80),
      /** The name per kiosk language (`{ mn: "Ус 0.5 л", ru: "Вода 0,5 л" }`); a missing language shows `name`. */
      names: z.partialRecord(z.enum(KIOSK_LANGUAGES, 'one of the kiosk languages mn, kk, ru, en'), z.string().min(1).max(80)).optional(),
      /** In the currency's smallest unit the provider charges in (MNT and KZT have none in practice). */
      price: z.number().int().positive(),
      /** Raise stock_low/<slot> when the counted stock falls to this; default slots.lowStockAt. */
      lowStockAt: z.number().int().min(0).max(10_000).optional(),
    })
    .strict();

/**
 * A catalog: each slot once. Used by `device.catalog` and by the catalog document
 * operators publish over MQTT, so both are held to exactly the same rules.
 */
export const catalogSchema = () =>
  z.array(catalogItemSchema()).superRefine((catalog, ctx) => {
    const seen = new Set<string>();
    catalog.forEach((item, index) => {
      if (seen.has(item.slot)) ctx.addIssue({ code: 'custom', path: [index, 'slot'], message: `slot "${item.slot}" appears twice` });
      seen.add(item.slot);
    });
  });

export const deviceSchema = () =>
  z
    .object({
      id: z
        .string()
        .min(1)
        .max(32)
        .regex(/^[a-z0-9][a-z0-9-]*$/, 'lower-case letters, digits and - only (it goes into MQTT topics and order references)'),
      mode: z.enum(['vending', 'turnstile']).default('vending'),
      livemode: z.boolean().default(false),
      currency: z
        .string()
        .regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as MNT or KZT')
        .default('MNT'),
      catalog: catalogSchema().default([]),
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
    });

export const slotsSchema = () =>
  z
    .object({
      /** A slot whose vend fails this many times in a row is taken out of sale (alarm slot_jammed/<slot>). */
      jamAfterFailures: intIn(1, 100, 3),
      /** Counted stock at or below this raises stock_low/<slot> (per item: catalog lowStockAt). */
      lowStockAt: intIn(0, 10_000, 2),
    })
    .strict();
