import { inTransaction, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import type { Outbox } from '../outbox/index.js';
import type { Settings } from '../settings/index.js';
import type { CatalogTables, SlotStateRow } from './tables.js';

export interface SlotView {
  slot: string;
  /** Counted stock; null until the slot is first refilled (then it is not counted). */
  stock: number | null;
  jammed: boolean;
  jammedAt: string | null;
  jamReason: string | null;
  consecutiveFailures: number;
}

/**
 * What the vend runner tells the catalog inside its settle transaction: the only two facts that
 * move stock and jam counters. Called only for vending-mode orders that name a slot.
 */
export interface SlotHooks {
  /** The item was delivered (the sensor or the machine said so): stock −1, the jam counter resets. */
  delivered(slot: string): void;
  /** Nothing came out: counts toward taking the slot out of sale; stock unchanged. */
  failed(slot: string, reason: string): void;
}

export const jamAlarm = (slot: string) => `slot_jammed/${slot}`;
export const lowStockAlarm = (slot: string) => `stock_low/${slot}`;

/** Stock and jams per slot (`slot_state`), reached through `Catalog.slots`. */
export interface Slots extends SlotHooks {
  /** One slot's stock and jam state. */
  get(slot: string): SlotView;
  /** The state of each of these slots, in the order given. */
  list(slots: string[]): SlotView[];
  /** Sets the counted stock after a technician filled the slot; throws BAD_REQUEST (count outside 0–10000) or UNKNOWN_SLOT. */
  refill(slot: string, count: unknown, by: string): SlotView;
  /** A technician fixed the slot: back in sale, jam counter reset (`wasJammed`: it was out of sale); throws UNKNOWN_SLOT. */
  clearJam(slot: string, by: string): SlotView & { wasJammed: boolean };
}

export function createSlots(
  deps: {
    db: Db;
    clock: Clock;
    outbox: Outbox;
    logger: Logger;
    tables: CatalogTables;
    lowStockAt(slot: string): number;
    knownSlot(slot: string): boolean;
  },
  settings: Readonly<Settings>['slots'],
): Slots {
  const { db, clock, outbox, tables } = deps;
  const log = deps.logger.child({ module: 'slots' });

  const read = (slot: string): SlotStateRow =>
    tables.slot(slot) ?? { slot, stock: null, consecutive_failures: 0, jammed_at: null, jam_reason: null, updated_at: 0 };
  const view = (row: SlotStateRow): SlotView => ({
    slot: row.slot,
    stock: row.stock,
    jammed: row.jammed_at !== null,
    jammedAt: row.jammed_at === null ? null : new Date(row.jammed_at).toISOString(),
    jamReason: row.jam_reason,
    consecutiveFailures: row.consecutive_failures,
  });

  /** Opens or clears stock_low/<slot> for the stock now counted. Caller owns the transaction. */
  function checkLowStock(slot: string, stock: number | null): void {
    const threshold = deps.lowStockAt(slot);
    if (stock !== null && stock <= threshold) {
      outbox.raiseAlarm(
        lowStockAlarm(slot),
        'warning',
        stock === 0 ? `slot ${slot} is sold out: refill it` : `slot ${slot} is running low: refill it`,
        { slot, stock, lowStockAt: threshold },
      );
    } else {
      outbox.clearAlarm(lowStockAlarm(slot));
    }
  }

  function mustKnow(slot: string): void {
    if (!deps.knownSlot(slot)) throw new VendgateError(ErrorCodes.UNKNOWN_SLOT, `unknown slot "${slot}": it is not in the catalog in use`);
  }

  const hooks: SlotHooks = {
    delivered(slot) {
      const row = read(slot);
      const stock = row.stock === null ? null : Math.max(0, row.stock - 1);
      tables.saveSlot({ ...row, stock, consecutive_failures: 0, updated_at: clock.now() });
      if (stock === null) return;
      checkLowStock(slot, stock);
      if (stock === 0) outbox.event('stock.sold_out', { slot });
    },
    failed(slot, reason) {
      const row = read(slot);
      const failures = row.consecutive_failures + 1;
      const jamNow = row.jammed_at === null && failures >= settings.jamAfterFailures;
      tables.saveSlot({
        ...row,
        consecutive_failures: failures,
        jammed_at: jamNow ? clock.now() : row.jammed_at,
        jam_reason: jamNow ? reason : row.jam_reason,
        updated_at: clock.now(),
      });
      if (!jamNow) return;
      outbox.raiseAlarm(
        jamAlarm(slot),
        'critical',
        `slot ${slot} failed ${failures} vends in a row and is out of sale: check it, then clear it (vendgate clear-jam ${slot} or cmd/clear_jam)`,
        { slot, failures, reason },
      );
      outbox.event('slot.jammed', { slot, failures, reason });
      log.error({ slot, failures, reason }, 'slot jammed: out of sale');
    },
  };

  return {
    ...hooks,

    get(slot: string): SlotView {
      return view(read(slot));
    },

    list(slots: string[]): SlotView[] {
      return slots.map((slot) => view(read(slot)));
    },

    /** Sets the counted stock after a technician filled the slot. */
    refill(slot: string, count: unknown, by: string): SlotView {
      if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > 10_000) {
        throw new VendgateError(ErrorCodes.BAD_REQUEST, 'count must be a whole number from 0 to 10000 (the items now in the slot)');
      }
      mustKnow(slot);
      inTransaction(db, () => {
        const row = read(slot);
        tables.saveSlot({ ...row, stock: count, updated_at: clock.now() });
        checkLowStock(slot, count);
        outbox.event('stock.refilled', { slot, stock: count, previous: row.stock, by });
      });
      log.info({ slot, stock: count, by }, 'slot refilled');
      return view(read(slot));
    },

    /** A technician fixed the slot: back in sale, jam counter reset. */
    clearJam(slot: string, by: string): SlotView & { wasJammed: boolean } {
      mustKnow(slot);
      const wasJammed = inTransaction(db, () => {
        const row = read(slot);
        if (row.jammed_at === null && row.consecutive_failures === 0) return false;
        tables.saveSlot({ ...row, consecutive_failures: 0, jammed_at: null, jam_reason: null, updated_at: clock.now() });
        outbox.clearAlarm(jamAlarm(slot));
        if (row.jammed_at !== null) outbox.event('slot.cleared', { slot, by });
        return row.jammed_at !== null;
      });
      if (wasJammed) log.info({ slot, by }, 'slot jam cleared: back in sale');
      return { ...view(read(slot)), wasJammed };
    },
  };
}
