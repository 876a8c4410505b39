import type { FastifyInstance } from 'fastify';
import type { KioskSlots } from './types.js';
import { badRequest } from './http-errors.js';

const SLOT_PATTERN = /^[A-Za-z0-9_-]{1,16}$/;

function parseSlot(raw: string): string {
  if (!SLOT_PATTERN.test(raw)) throw badRequest('the slot must be a catalog slot: 1 to 16 letters, digits, - or _');
  return raw;
}

/** Refill body: exactly `{ "count": <items now in the slot> }`; anything else is refused before the catalog sees it. */
function parseRefill(body: unknown): number {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw badRequest('the body must be a JSON object such as {"count":12}');
  for (const key of Object.keys(body)) {
    if (key !== 'count') throw badRequest(`unknown field "${key.slice(0, 32)}"; only "count" is accepted`);
  }
  const count = (body as { count?: unknown }).count;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > 10_000) {
    throw badRequest('count must be a whole number from 0 to 10000 (the items now in the slot)');
  }
  return count;
}

/**
 * The on-site screen's stock routes on the local listener (127.0.0.1 only): what each slot holds,
 * and a refill after a technician filled it. Jams are cleared by the CLI or MQTT, not here: a
 * customer-facing screen must not put a broken slot back on sale.
 */
export function registerSlotRoutes(app: FastifyInstance, slots: KioskSlots): void {
  app.get('/api/slots', async () => ({ slots: slots.list() }));
  app.post<{ Params: { slot: string } }>('/api/slots/:slot/refill', async (request) => {
    const slot = parseSlot(request.params.slot);
    return slots.refill(slot, parseRefill(request.body));
  });
}
