import * as z from 'zod';
import { intIn } from './number.js';

/** An ed25519 public key as base64 of its DER SubjectPublicKeyInfo (what `vendgate command keygen` prints). */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function isEd25519PublicKey(text: string): boolean {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return false;
  const der = Buffer.from(text, 'base64');
  return der.length === 44 && der.subarray(0, 12).equals(ED25519_SPKI_PREFIX);
}

/**
 * Who may give the commands that move money, goods or prices (docs/security.md). Each operator key
 * has an id that goes into every signed command, the order history and the audit event; rotating
 * a key is adding the new one, switching the signer, then removing the old one.
 */
export const commandsSchema = () =>
  z.strictObject({
    keys: z
      .array(
        z.strictObject({
          id: z
            .string()
            .min(1)
            .max(64)
            .regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits and . _ : - only, e.g. "ops-2026-12"'),
          publicKey: z
            .string()
            .trim()
            .refine(
              isEd25519PublicKey,
              'an ed25519 public key, base64 of its DER SPKI (44 bytes, "MCowBQYDK2VwAyEA…"): see vendgate command keygen',
            ),
        }),
      )
      .default([])
      .superRefine((keys, ctx) => {
        const seen = new Set<string>();
        keys.forEach((key, index) => {
          if (seen.has(key.id)) ctx.addIssue({ code: 'custom', path: [index, 'id'], message: `key id "${key.id}" appears twice` });
          seen.add(key.id);
        });
      }),
    /**
     * The operator's side (`vendgate command send`): each device's public answer key (vendgate command
     * device-key on the device), by device id. An answer not signed by it is refused.
     */
    deviceKeys: z
      .record(
        z.string().min(1).max(64),
        z.string().trim().refine(isEd25519PublicKey, 'an ed25519 public key, base64 of its DER SPKI: see vendgate command device-key'),
      )
      .default({}),
    /** A signed command whose expiresAt is further than this after its issuedAt is refused. */
    maxLifetimeSec: z
      .number()
      .int()
      .min(10)
      .max(7 * 86_400)
      .default(3_600),
    /** How far in the future a command's issuedAt may be (the signer's clock may run ahead of ours). */
    clockSkewSec: intIn(0, 3_600, 300),
  });

const bound = () => z.number().int().positive();

/**
 * Price bounds no remote catalog can cross (nor the settings' own catalog): a floor and a ceiling
 * for every item, which a slot's own bounds may only narrow (a slot floor below the global floor or
 * a slot ceiling above the global ceiling is a configuration error). In the currency's smallest unit,
 * like the prices.
 */
export const pricingSchema = () =>
  z
    .strictObject({
      floor: bound().optional(),
      ceiling: bound().optional(),
      slots: z.record(z.string().min(1).max(16), z.strictObject({ floor: bound().optional(), ceiling: bound().optional() })).default({}),
    })
    .superRefine((pricing, ctx) => {
      const check = (floor: number | undefined, ceiling: number | undefined, path: (string | number)[]) => {
        if (floor !== undefined && ceiling !== undefined && floor > ceiling) {
          ctx.addIssue({ code: 'custom', path: [...path, 'floor'], message: `the floor ${floor} is above the ceiling ${ceiling}` });
        }
      };
      check(pricing.floor, pricing.ceiling, []);
      for (const [slot, slotBounds] of Object.entries(pricing.slots)) {
        const path = ['slots', slot];
        if (slotBounds.floor !== undefined && pricing.floor !== undefined && slotBounds.floor < pricing.floor) {
          ctx.addIssue({
            code: 'custom',
            path: [...path, 'floor'],
            message: `${slotBounds.floor} is below the global floor ${pricing.floor}: a slot's bounds may only narrow the global ones`,
          });
        }
        if (slotBounds.ceiling !== undefined && pricing.ceiling !== undefined && slotBounds.ceiling > pricing.ceiling) {
          ctx.addIssue({
            code: 'custom',
            path: [...path, 'ceiling'],
            message: `${slotBounds.ceiling} is above the global ceiling ${pricing.ceiling}: a slot's bounds may only narrow the global ones`,
          });
        }
        const { floor, ceiling } = priceBoundsFor(pricing, slot);
        check(floor, ceiling, path);
      }
    });

export type PricingSettings = z.infer<ReturnType<typeof pricingSchema>>;

/**
 * The floor and ceiling that hold for one slot: the narrower of the slot's own and the global ones,
 * so a slot's bound never widens the global range (the schema refuses one that tries; this holds
 * also for settings built without it).
 */
export function priceBoundsFor(pricing: PricingSettings, slot: string): { floor?: number; ceiling?: number } {
  const own = Object.hasOwn(pricing.slots, slot) ? pricing.slots[slot] : undefined;
  return { floor: narrower(Math.max, own?.floor, pricing.floor), ceiling: narrower(Math.min, own?.ceiling, pricing.ceiling) };
}

function narrower(pick: (a: number, b: number) => number, own: number | undefined, global: number | undefined): number | undefined {
  if (own === undefined) return global;
  return global === undefined ? own : pick(own, global);
}

/** One price outside its bounds: where (the catalog's own path) and why. */
export interface PriceProblem {
  path: (string | number)[];
  message: string;
}

/** Every price of `items` outside its bounds (the whole list, not the first one). */
export function priceProblems(pricing: PricingSettings, items: readonly { slot: string; price: number }[]): PriceProblem[] {
  const problems: PriceProblem[] = [];
  items.forEach((item, index) => {
    const { floor, ceiling } = priceBoundsFor(pricing, item.slot);
    const path = [index, 'price'];
    if (floor !== undefined && item.price < floor) {
      problems.push({ path, message: `${item.price} for slot ${item.slot} is below the floor ${floor} (pricing in the local settings)` });
    }
    if (ceiling !== undefined && item.price > ceiling) {
      problems.push({
        path,
        message: `${item.price} for slot ${item.slot} is above the ceiling ${ceiling} (pricing in the local settings)`,
      });
    }
  });
  return problems;
}
