import { z } from 'zod';
import { catalogSchema, type CatalogItem } from '../settings/index.js';

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
    items: catalogSchema.refine((items) => items.length > 0, 'a catalog needs at least one item {slot, name, price}'),
  })
  .strict();

export interface CatalogDocument {
  version: string;
  items: CatalogItem[];
}

/** Checks a document; every problem is returned at once as `path: message`, like the settings. */
export function parseCatalogDocument(input: unknown): { ok: true; document: CatalogDocument } | { ok: false; problems: string[] } {
  const parsed = catalogDocumentSchema.safeParse(input);
  if (parsed.success) return { ok: true, document: parsed.data };
  return {
    ok: false,
    problems: parsed.error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(document)'}: ${issue.message}`),
  };
}
