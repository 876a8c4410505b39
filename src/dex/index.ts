import type { Settings } from '../settings/index.js';
import type { Outbox } from '../outbox/index.js';
import type { Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import { buildInfo } from '../version.js';
import type { Catalog } from '../catalog/index.js';
import { createDexAudit, type DexAudit } from './audit.js';
import { createVisits, type Visits } from './visit.js';

export { createDexAudit, type DexAudit, type DexRead, type DexHeader } from './audit.js';
export { crc16Arc, formatDex, dexCurrency } from './format.js';
export { createVisits, type Visits, type PicklistRow } from './visit.js';
export { startDexSchedule, nextDailyAt } from './schedule.js';

/** Where the audit's side mark lives: beside the database file. */
export function dexMarkPath(dbPath: string): string | null {
  return dbPath === ':memory:' ? null : `${dbPath}-dex-mark.json`;
}

/**
 * The audit of this device from its settings. `items` is the catalog in force (the caller's catalog,
 * which follows published versions); a turnstile has one selection, the fare.
 */
export function dexAuditFor(
  settings: Readonly<Settings>,
  deps: { db: Db; clock: Clock; outbox: Outbox; items: () => readonly { slot: string; name: string; price: number }[] },
): DexAudit {
  const turnstile = settings.device.mode === 'turnstile';
  return createDexAudit({
    db: deps.db,
    clock: deps.clock,
    outbox: deps.outbox,
    deviceId: settings.device.id,
    currency: settings.device.currency,
    version: buildInfo().version,
    items: turnstile ? () => [{ slot: 'FARE', name: 'fare', price: settings.device.fare ?? 0 }] : deps.items,
    markPath: dexMarkPath(settings.storage.path),
    keepReads: settings.dex.keepReads,
  });
}

/** What the audit and a visit use of the catalog: its items, and the slots' refill and stock. */
export type DexCatalog = Pick<Catalog, 'current' | 'item'> & { slots: Pick<Catalog['slots'], 'refill' | 'get'> };

/**
 * The audit and the visits of this device, as `vendgate dex`/`visit` on site and `cmd/dex`/`cmd/visit`
 * over MQTT both use them: one code path for a read and for a visit.
 */
export function dexServiceFor(
  settings: Readonly<Settings>,
  deps: { db: Db; clock: Clock; outbox: Outbox; catalog: DexCatalog },
): { audit: DexAudit; visits: Visits } {
  const { db, clock, outbox, catalog } = deps;
  const audit = dexAuditFor(settings, { db, clock, outbox, items: () => catalog.current().items });
  const visits = createVisits({
    db,
    clock,
    outbox,
    audit,
    slots: {
      refill: (slot, count, by) => catalog.slots.refill(slot, count, by),
      stock: (slot) => catalog.slots.get(slot).stock,
      known: (slot) => catalog.item(slot) !== undefined,
    },
  });
  return { audit, visits };
}
