import { inTransaction, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { priceProblems } from '../settings/index.js';
import type { Outbox } from '../outbox/index.js';
import type { CatalogItem, Settings } from '../settings/index.js';
import { itemForSlot } from './pricing.js';
import { parseCatalogDocument, SETTINGS_VERSION, type CatalogDocument } from './document.js';
import { createCatalogTables } from './tables.js';
import { createSlots, type Slots, type SlotView } from './slots.js';

export interface CatalogDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
}

/** `pricing`: the bounds no applied document may cross (none when absent). */
export type CatalogSettings = Pick<Readonly<Settings>, 'device' | 'slots'> & { pricing?: Readonly<Settings>['pricing'] };

/** The catalog as it is applied now, for the retained `catalog` topic and the CLI. */
export interface AppliedCatalog {
  version: string;
  source: string;
  appliedAt: string | null;
  items: CatalogItem[];
}

/** A catalog item with what the screen needs to offer it (or not). */
export interface OfferedItem extends CatalogItem {
  available: boolean;
  /** Why it cannot be bought now. */
  unavailable: 'sold_out' | 'jammed' | null;
  stock: number | null;
}

/** Alarm while the applied catalog crosses the local price bounds (they were tightened): the settings' catalog is sold meanwhile. */
export const OUT_OF_BOUNDS_ALARM = 'catalog_out_of_bounds';

/** Relative topic of the retained applied-catalog message. */
export const CATALOG_TOPIC = 'catalog';

/** The live catalog, as the order service, the screen, the MQTT commands and the CLI use it. */
export interface Catalog {
  /** The catalog applied now (the settings' one until a document was applied). */
  current(): AppliedCatalog;
  /** The item in `slot` in the catalog in use, if any. */
  item(slot: string): CatalogItem | undefined;
  /** Stock and jams per slot. */
  slots: Slots;
  /**
   * The item an order for `slot` is priced from, or the reason it cannot be sold: UNKNOWN_SLOT,
   * SLOT_JAMMED or SOLD_OUT (statuses in util/errors.ts). MDB: an item the catalog does not list is
   * left to the caller.
   */
  forSale(slot: string | undefined): CatalogItem;
  /** Throws SLOT_JAMMED or SOLD_OUT when a listed item cannot be sold now. */
  assertSellable(slot: string): void;
  /** Every item with its availability, for the screen (sold-out and jammed items are not offered). */
  offered(): OfferedItem[];
  /**
   * Validates and applies a catalog document in one transaction; every problem is reported
   * (CATALOG_INVALID) and nothing changes when there is one. The same version again with the same
   * content is a no-op; with other content it is refused (a fleet tool compares versions, so they
   * must mean one thing).
   */
  apply(input: unknown, source: string): { version: string; previousVersion: string; changed: boolean };
  /** Back to the catalog applied before the current one (the settings' catalog when there is none); CATALOG_INVALID when there is nothing to roll back. */
  rollback(source: string): { version: string; rolledBack: string };
  /**
   * Start-up: the applied version is announced again (retained), in case the broker lost it. An
   * applied document that crosses the price bounds of these settings raises OUT_OF_BOUNDS_ALARM.
   */
  announce(): void;
  /** Changes when the catalog or a slot changed (also by the CLI from another process). */
  generation(): string;
}

/**
 * The remote catalog and the slots' stock and jams. The current catalog is read from the database on
 * every use (one indexed row, parsed again only when it changed), so the CLI, MQTT and the service see
 * the same one. Applying is one transaction: an order is priced from whichever catalog was current
 * when it was created and keeps that price (the amount is in its own row), so a push never reprices an
 * order already on screen, and the next order gets the new prices.
 */
export function createCatalog(deps: CatalogDeps, settings: CatalogSettings): Catalog {
  const { db, clock, outbox } = deps;
  const log = deps.logger.child({ module: 'catalog' });
  const tables = createCatalogTables(db);
  const fromSettings: AppliedCatalog = { version: SETTINGS_VERSION, source: 'settings', appliedAt: null, items: settings.device.catalog };
  let cached: { seq: number; catalog: AppliedCatalog; crossing: string[] } | null = null;

  /** Every price of `items` outside the local bounds, as `items.N.price: …` lines. */
  function crossing(items: readonly CatalogItem[]): string[] {
    if (!settings.pricing) return [];
    return priceProblems(settings.pricing, items).map((problem) => `items.${problem.path.join('.')}: ${problem.message}`);
  }

  /** The applied row, with the prices of it that cross the bounds (parsed again only when it changed). */
  function applied(): { catalog: AppliedCatalog; crossing: string[] } | null {
    const row = tables.currentVersion();
    if (!row) return null;
    if (cached?.seq !== row.seq) {
      const document = JSON.parse(row.document) as CatalogDocument;
      cached = {
        seq: row.seq,
        catalog: { version: row.version, source: row.source, appliedAt: new Date(row.applied_at).toISOString(), items: document.items },
        // A document applied under wider bounds (before the settings were tightened) is not sold.
        crossing: crossing(document.items),
      };
    }
    return cached;
  }

  function current(): AppliedCatalog {
    const found = applied();
    return !found || found.crossing.length > 0 ? fromSettings : found.catalog;
  }

  const item = (slot: string): CatalogItem | undefined => current().items.find((entry) => entry.slot === slot);
  const lowStockAt = (slot: string): number => item(slot)?.lowStockAt ?? settings.slots.lowStockAt;
  const slots = createSlots(
    { db, clock, outbox, logger: deps.logger, tables, lowStockAt, knownSlot: (slot) => item(slot) !== undefined },
    settings.slots,
  );

  /** Caller owns the transaction. */
  function publishApplied(previous: string | null): void {
    const applied = current();
    outbox.retain(
      CATALOG_TOPIC,
      JSON.stringify({
        version: applied.version,
        previousVersion: previous,
        source: applied.source,
        appliedAt: applied.appliedAt,
        items: applied.items,
      }),
    );
  }

  function refusalFor(slot: string): VendgateError | null {
    const state = slots.get(slot);
    if (state.jammed) {
      return new VendgateError(
        ErrorCodes.SLOT_JAMMED,
        `slot ${slot} is out of order (${state.jamReason ?? 'jammed'}); please choose another product`,
        { details: { slot } },
      );
    }
    if (state.stock === 0)
      return new VendgateError(ErrorCodes.SOLD_OUT, `slot ${slot} is sold out; please choose another product`, {
        details: { slot },
      });
    return null;
  }

  function invalid(problems: string[], version: unknown): VendgateError {
    inTransaction(db, () =>
      outbox.event('catalog.rejected', {
        version: typeof version === 'string' || typeof version === 'number' ? String(version) : null,
        problems,
      }),
    );
    return new VendgateError(ErrorCodes.CATALOG_INVALID, `catalog not applied, nothing changed: ${problems.join('; ')}`, {
      details: { problems },
    });
  }

  return {
    current,
    item,
    slots,

    /**
     * The item an order for `slot` is priced from, or the reason it cannot be sold: unknown slot
     * (400), jammed or sold out (409). MDB: an item the catalog does not list is left to the caller.
     */
    forSale(slot: string | undefined): CatalogItem {
      const found = itemForSlot(current().items, slot);
      const refusal = refusalFor(found.slot);
      if (refusal) throw refusal;
      return found;
    },

    /** Throws when a listed item cannot be sold now (jammed, sold out). */
    assertSellable(slot: string): void {
      if (!item(slot)) return;
      const refusal = refusalFor(slot);
      if (refusal) throw refusal;
    },

    /** Every item with its availability, for the screen (sold-out and jammed items are not offered). */
    offered(): OfferedItem[] {
      return current().items.map((entry) => {
        const state: SlotView = slots.get(entry.slot);
        const unavailable = state.jammed ? 'jammed' : state.stock === 0 ? 'sold_out' : null;
        return { ...entry, available: unavailable === null, unavailable, stock: state.stock };
      });
    },

    /**
     * Validates and applies a catalog document in one transaction; every problem is reported and
     * nothing changes when there is one. The same version again with the same content is a no-op;
     * with other content it is refused (a fleet tool compares versions, so they must mean one thing).
     */
    apply(input: unknown, source: string): { version: string; previousVersion: string; changed: boolean } {
      const version = (input as { version?: unknown } | null)?.version;
      const parsed = parseCatalogDocument(input, settings.pricing);
      if (!parsed.ok) throw invalid(parsed.problems, version);
      const document = parsed.document;
      const serialized = JSON.stringify(document);
      const result = inTransaction(db, () => {
        const now = current();
        const row = tables.currentVersion();
        if (now.version === document.version && row?.document === serialized) {
          return { version: document.version, previousVersion: now.version, changed: false };
        }
        // A version names one document for ever: not another one later, and not itself again once
        // it was superseded or rolled back (an old, captured document is not a way back in).
        const first = tables.versionRows(document.version)[0];
        if (first) {
          const when = new Date(first.applied_at).toISOString();
          return first.document === serialized
            ? `version: ${document.version} was applied at ${when} and is no longer in use${first.rolled_back_at !== null ? ' (rolled back)' : ''}; publish it again under a new version`
            : `version: ${document.version} already names another document (applied at ${when}); publish the change under a new version`;
        }
        tables.insertVersion(document.version, serialized, source, clock.now());
        outbox.clearAlarm(OUT_OF_BOUNDS_ALARM);
        outbox.event('catalog.applied', { version: document.version, previousVersion: now.version, source, items: document.items.length });
        publishApplied(now.version);
        return { version: document.version, previousVersion: now.version, changed: true };
      });
      if (typeof result === 'string') throw invalid([result], version);
      if (result.changed) log.info({ version: result.version, previousVersion: result.previousVersion, source }, 'catalog applied');
      return result;
    },

    /** Back to the catalog applied before the current one (the settings' catalog when there is none). */
    rollback(source: string): { version: string; rolledBack: string } {
      type Outcome = { version: string; rolledBack: string } | { refused: string; problems: string[] } | null;
      const result = inTransaction(db, (): Outcome => {
        const row = tables.currentVersion();
        if (!row) return null;
        // A rollback never brings back prices the local bounds forbid (they may have been tightened since).
        const target = tables.versionBefore(row.seq);
        const problems = target ? crossing((JSON.parse(target.document) as CatalogDocument).items) : [];
        if (target && problems.length > 0) return { refused: target.version, problems };
        tables.markRolledBack(row.seq, clock.now());
        outbox.clearAlarm(OUT_OF_BOUNDS_ALARM);
        const back = current();
        outbox.event('catalog.rolled_back', { from: row.version, to: back.version, source });
        publishApplied(row.version);
        return { version: back.version, rolledBack: row.version };
      });
      if (!result)
        throw new VendgateError(
          ErrorCodes.CATALOG_INVALID,
          `nothing to roll back: the catalog in use is the one in the settings (version "${SETTINGS_VERSION}")`,
        );
      if ('refused' in result) {
        throw invalid(
          [
            `rollback: version ${result.refused} crosses the local price bounds (pricing); publish a catalog within them under a new version`,
            ...result.problems,
          ],
          result.refused,
        );
      }
      log.warn({ ...result, source }, 'catalog rolled back');
      return result;
    },

    /** Start-up: the applied version is announced again (retained), in case the broker lost it. */
    announce(): void {
      const found = applied();
      const problems = found?.crossing ?? [];
      inTransaction(db, () => {
        if (found && problems.length > 0) {
          outbox.raiseAlarm(
            OUT_OF_BOUNDS_ALARM,
            'warning',
            `catalog ${found.catalog.version} crosses the local price bounds (pricing): the settings' catalog is sold until a catalog within them is applied`,
            { version: found.catalog.version, problems },
          );
        } else outbox.clearAlarm(OUT_OF_BOUNDS_ALARM);
        publishApplied(null);
      });
      if (found && problems.length > 0) {
        log.error(
          { version: found.catalog.version, problems },
          'the applied catalog crosses the local price bounds; selling the settings catalog',
        );
      }
    },

    /** Changes when the catalog or a slot changed (also by the CLI from another process). */
    generation: tables.generation,
  };
}
