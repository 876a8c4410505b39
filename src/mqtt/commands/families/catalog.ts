import * as z from 'zod';
import { CommandError, CommandErrorCodes } from '../answers.js';
import { requestId, type CommandContext, type Handlers } from '../family.js';

const slot = z.string().min(1).max(16);

/** `cmd/catalog`, `cmd/catalog_rollback`, `cmd/refill`, `cmd/clear_jam`: prices and goods (all signed). */
export const catalogSchemas = {
  // The document itself is checked by the catalog's own schema, so its errors name its own paths.
  catalog: z
    .object({ requestId, catalog: z.unknown().refine((value) => value !== undefined, 'the catalog document {version, items} is missing') })
    .strict(),
  catalog_rollback: z.object({ requestId }).strict(),
  refill: z.object({ requestId, slot, count: z.number().int().min(0).max(10_000) }).strict(),
  clear_jam: z.object({ requestId, slot }).strict(),
} as const;

export function catalogHandlers({ control }: CommandContext): Handlers<typeof catalogSchemas> {
  function catalogControl() {
    if (!control.catalog)
      throw new CommandError(CommandErrorCodes.UNKNOWN_COMMAND, 'this device keeps no catalog (turnstile or no catalog control)');
    return control.catalog;
  }
  return {
    catalog: ({ catalog }, by) => catalogControl().apply(catalog, by),
    catalog_rollback: (_body, by) => catalogControl().rollback(by),
    refill: ({ slot, count }, by) => catalogControl().refill(slot, count, by),
    clear_jam: ({ slot }, by) => catalogControl().clearJam(slot, by),
  };
}
