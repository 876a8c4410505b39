import type { Outbox } from '../outbox/index.js';
import { prepared, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import type { DexAudit, DexRead } from './audit.js';

/** What a visit needs of the slots: the same refill the CLI, the API and `cmd/refill` use. */
export interface VisitSlots {
  refill(slot: string, count: number, by: string): unknown;
  stock(slot: string): number | null;
  known(slot: string): boolean;
}

export interface PicklistRow {
  selection: string;
  name: string;
  /** Counted stock now (null: not counted). */
  stock: number | null;
  /** Vends since the last visit (or reset read). */
  sold: number;
  /** The level the slot was filled to at the last visit (null: no visit recorded it). */
  filledTo: number | null;
  /** How many to bring: back to the last fill level, else what was sold. */
  bring: number;
}

export interface VisitResult {
  visit: number;
  at: string;
  by: string;
  fills: Record<string, number>;
  read: DexRead;
}

/**
 * The service visit: who came, what they filled (which sets the counted stock, as `vendgate refill`
 * does), and the reset read that starts the next interval, all in one commit. Its `service.visit`
 * event carries the DEX file of that read.
 */
export function createVisits(deps: { db: Db; clock: Clock; outbox: Outbox; audit: DexAudit; slots: VisitSlots }) {
  const { db, clock } = deps;

  function lastFills(): Record<string, number> {
    const row = prepared(db, 'SELECT fills FROM dex_visits ORDER BY id DESC LIMIT 1').get() as { fills: string } | undefined;
    return row ? (JSON.parse(row.fills) as Record<string, number>) : {};
  }

  return {
    /** `via`: how it was recorded when not on site, e.g. `mqtt (key ops-1, request r-7)`: in the refills' audit and the event. */
    record(by: string, fills: Record<string, number>, via?: string): VisitResult {
      const who = by.trim();
      if (who.length === 0 || who.length > 100)
        throw new VendgateError(ErrorCodes.BAD_REQUEST, 'a visit names who came (1 to 100 characters)');
      const problems: string[] = [];
      for (const [slot, count] of Object.entries(fills)) {
        if (!deps.slots.known(slot)) problems.push(`${slot}: no such slot in the catalog`);
        if (!Number.isInteger(count) || count < 0 || count > 10_000)
          problems.push(`${slot}: the count must be a whole number from 0 to 10000`);
      }
      if (problems.length > 0) throw new VendgateError(ErrorCodes.BAD_REQUEST, `nothing recorded: ${problems.join('; ')}`);
      let visit = 0;
      const at = new Date(clock.now()).toISOString();
      const read = deps.audit.readWith(
        'visit',
        who,
        () => {
          for (const [slot, count] of Object.entries(fills))
            deps.slots.refill(slot, count, via ? `visit:${who} via ${via}` : `visit:${who}`);
        },
        (taken) => {
          visit = Number(
            prepared(db, 'INSERT INTO dex_visits (at, by, fills, read_seq) VALUES (?, ?, ?, ?)').run(
              clock.now(),
              who,
              JSON.stringify(fills),
              taken.header.read,
            ).lastInsertRowid,
          );
          deps.outbox.event('service.visit', {
            visit,
            by: who,
            ...(via ? { via } : {}),
            fills,
            read: taken.header.read,
            dex: taken.text,
          });
        },
      );
      return { visit, at, by: who, fills, read };
    },

    /** Per selection: how many items to bring at the next visit. */
    picklist(): PicklistRow[] {
      const filled = lastFills();
      return deps.audit.sinceReset().map(({ selection, name, sold }) => {
        const stock = deps.slots.known(selection) ? deps.slots.stock(selection) : null;
        const filledTo = filled[selection] ?? null;
        const bring = filledTo !== null && stock !== null ? Math.max(0, filledTo - stock) : sold;
        return { selection, name, stock, sold, filledTo, bring };
      });
    },
  };
}

export type Visits = ReturnType<typeof createVisits>;
