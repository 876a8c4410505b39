import * as z from 'zod';
import { catalogSchema, priceProblems, type CatalogItem, type PricingSettings } from '../settings/index.js';

/** The version the settings' own device.catalog goes by, before any document was applied. */
export const SETTINGS_VERSION = 'settings';

/**
 * The document an operator publishes on `cmd/catalog`: a version and the whole catalog. Items are
 * checked by the very schema `device.catalog` uses (settings/sections/device.ts), so a catalog that
 * would not start the device is never applied to it remotely either.
 */
export const catalogDocumentSchema = z
  .object({
    version: z
      .union([
        z
          .string()
          .min(1)
          .max(64)
          .regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits and . _ : - only, e.g. "2026-12-01.1"'),
        z.number().int().positive(),
      ])
      .transform(String)
      .refine(
        (version) => version !== SETTINGS_VERSION,
        `"${SETTINGS_VERSION}" names the catalog in the device's settings; choose another version`,
      ),
    items: catalogSchema().refine((items) => items.length > 0, 'a catalog needs at least one item {slot, name, price}'),
  })
  .strict();

export interface CatalogDocument {
  version: string;
  items: CatalogItem[];
}

/**
 * Checks a document; every problem is returned at once as `path: message`, like the settings: the
 * schema's, a slot listed twice (also when another item is invalid, which stops the schema's own
 * check), and every price outside the local `pricing` bounds.
 */
export function parseCatalogDocument(
  input: unknown,
  pricing?: PricingSettings,
): { ok: true; document: CatalogDocument } | { ok: false; problems: string[] } {
  const parsed = catalogDocumentSchema.safeParse(input);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(document)'}: ${issue.message}`);
  const items = (input as { items?: unknown } | null)?.items;
  if (Array.isArray(items)) {
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const slot = (item as { slot?: unknown } | null)?.slot;
      if (typeof slot !== 'string') return;
      const line = `items.${index}.slot: slot "${slot}" appears twice`;
      if (seen.has(slot) && !problems.includes(line)) problems.push(line);
      seen.add(slot);
    });
    if (pricing) {
      const priced = items.filter(
        (item): item is { slot: string; price: number } =>
          typeof (item as { slot?: unknown } | null)?.slot === 'string' && typeof (item as { price?: unknown }).price === 'number',
      );
      // Indexes are those of the document, not of the filtered list.
      for (const problem of priceProblems(pricing, priced)) {
        const index = items.indexOf(priced[problem.path[0] as number]);
        problems.push(`items.${index}.price: ${problem.message}`);
      }
    }
  }
  if (problems.length === 0 && parsed.success) return { ok: true, document: parsed.data };
  return { ok: false, problems };
}
