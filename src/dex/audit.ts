import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import type { CatalogItem } from '../settings/index.js';
import type { Outbox } from '../outbox/index.js';
import { durably, prepared, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { dexCurrency, formatDex, type DexSelection, type Pair } from './format.js';

export type ReadKind = 'read' | 'reset' | 'visit';

export interface DexDeps {
  db: Db;
  clock: Clock;
  outbox: Outbox;
  deviceId: string;
  currency: string;
  version: string;
  /** The catalog in force (a turnstile: one item, the fare, slot `FARE`). */
  items: () => readonly Pick<CatalogItem, 'slot' | 'name' | 'price'>[];
  /** The side mark beside the database: the last read's figures, which a restored database cannot roll back (null: none, an in-memory database). */
  markPath: string | null;
  /** How many reads keep their file for a collector that asks again. */
  keepReads: number;
}

export interface DexHeader {
  type: 'dex.read';
  kind: ReadKind;
  read: number;
  at: string;
  deviceId: string;
  by: string;
  paid: { init: Pair; reset: Pair };
  /** Refunds of sales whose goods went out: the vends stay counted in the file, the refunds are here. */
  refundsAfterDelivery: { init: Pair; reset: Pair };
  /** Set on the first read after the counters went back (a restored database), taken on purpose. */
  afterRestore?: { lastRead: number; paidCount: number; paidValue: number };
}

export interface DexRead {
  header: DexHeader;
  text: string;
}

interface CounterRow {
  selection: string;
  price: number;
  item_name: string;
  vends_init: number;
  value_init: number;
  vends_reset: number;
  value_reset: number;
  refunds_init: number;
  refunded_init: number;
  refunds_reset: number;
  refunded_reset: number;
}

interface Mark {
  read: number;
  paidCount: number;
  paidValue: number;
}

const sum = (rows: CounterRow[], count: keyof CounterRow, value: keyof CounterRow): Pair => ({
  count: rows.reduce((n, r) => n + (r[count] as number), 0),
  value: rows.reduce((n, r) => n + (r[value] as number), 0),
});

function readMark(path: string): Mark | null {
  try {
    const mark = JSON.parse(readFileSync(path, 'utf8')) as Partial<Mark>;
    return typeof mark.read === 'number' && typeof mark.paidCount === 'number' && typeof mark.paidValue === 'number'
      ? (mark as Mark)
      : null;
  } catch {
    return null;
  }
}

/** Written to a temporary file, synced, renamed: a cut leaves the old mark or the new one. */
function writeMark(path: string, mark: Mark): void {
  const temp = `${path}.tmp`;
  const fd = openSync(temp, 'w', 0o640);
  try {
    writeSync(fd, JSON.stringify(mark));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

/**
 * The audit of this machine from the ledger's running totals (migration 015's triggers). A read is
 * one transaction: the file is made from the counters, the read is recorded, and a reset read zeroes
 * the interval counters in the same commit, so no sale falls between two intervals or into both.
 */
export function createDexAudit(deps: DexDeps) {
  const { db, clock } = deps;
  const money = dexCurrency(deps.currency);

  function counters(): CounterRow[] {
    return prepared(db, 'SELECT * FROM dex_counters ORDER BY selection, price').all() as CounterRow[];
  }

  function selections(rows: CounterRow[]): DexSelection[] {
    const items = deps.items();
    const ids = [
      ...items.map((i) => i.slot),
      ...[...new Set(rows.map((r) => r.selection))].filter((s) => !items.some((i) => i.slot === s)).sort(),
    ];
    return ids.map((id) => {
      const mine = rows.filter((r) => r.selection === id);
      const item = items.find((i) => i.slot === id);
      const latest = mine.at(-1);
      return {
        id,
        price: item?.price ?? latest?.price ?? 0,
        name: item?.name ?? latest?.item_name ?? id,
        init: sum(mine, 'vends_init', 'value_init'),
        reset: sum(mine, 'vends_reset', 'value_reset'),
        prices: mine.map((r) => ({ price: r.price, init: r.vends_init, reset: r.vends_reset })),
      };
    });
  }

  function take(
    kind: ReadKind,
    by: string,
    options: { afterRestore?: boolean; inside?: () => void; after?: (read: DexRead) => void } = {},
  ): DexRead {
    if (!money) {
      throw new VendgateError(
        ErrorCodes.CONFIG_INVALID,
        `device.currency ${deps.currency} has no DEX currency number here: the audit supports MNT, KZT, RUB, KGS, UZS, CNY, USD, EUR`,
      );
    }
    const mark = deps.markPath ? readMark(deps.markPath) : null;
    const result = durably(
      db,
      () => {
        options.inside?.();
        const rows = counters();
        const paid = { init: sum(rows, 'vends_init', 'value_init'), reset: sum(rows, 'vends_reset', 'value_reset') };
        const last = prepared(db, 'SELECT seq, at FROM dex_reads ORDER BY seq DESC LIMIT 1').get() as
          { seq: number; at: number } | undefined;
        const lastReset = prepared(db, "SELECT max(seq) AS seq FROM dex_reads WHERE kind IN ('reset', 'visit')").get() as {
          seq: number | null;
        };
        const behind =
          mark !== null && ((last?.seq ?? 0) < mark.read || paid.init.count < mark.paidCount || paid.init.value < mark.paidValue);
        if (behind && !options.afterRestore) {
          throw new VendgateError(
            ErrorCodes.DEX_BEHIND,
            `the database holds less than the last audit read (read ${mark.read}: ${mark.paidCount} vends, ${mark.paidValue} paid; ` +
              `here: read ${last?.seq ?? 0}, ${paid.init.count} vends, ${paid.init.value} paid): it was restored or replaced, and its ` +
              `"since init" counters would go backwards. Nothing was read. After checking, take the read that starts the chain again on purpose: vendgate dex --after-restore`,
          );
        }
        const at = clock.now();
        const header: DexHeader = {
          type: 'dex.read',
          kind,
          read: 0,
          at: new Date(at).toISOString(),
          deviceId: deps.deviceId,
          by,
          paid,
          refundsAfterDelivery: { init: sum(rows, 'refunds_init', 'refunded_init'), reset: sum(rows, 'refunds_reset', 'refunded_reset') },
          ...(behind && mark ? { afterRestore: { lastRead: mark.read, paidCount: mark.paidCount, paidValue: mark.paidValue } } : {}),
        };
        const seq = Number(
          prepared(db, 'INSERT INTO dex_reads (kind, at, by, header) VALUES (?, ?, ?, ?)').run(kind, at, by, JSON.stringify(header))
            .lastInsertRowid,
        );
        header.read = seq;
        const readsSinceReset = seq - (lastReset.seq ?? 0);
        const text = formatDex({
          deviceId: deps.deviceId,
          version: deps.version,
          decimals: money.decimals,
          currencyNumber: money.currencyNumber,
          at: new Date(at),
          paid,
          selections: selections(rows),
          readsSinceInit: seq,
          lastReadAt: last ? new Date(last.at) : null,
          readsSinceReset,
        });
        prepared(db, 'UPDATE dex_reads SET header = ?, text = ? WHERE seq = ?').run(JSON.stringify(header), text, seq);
        prepared(db, 'UPDATE dex_reads SET text = NULL WHERE seq <= ? AND text IS NOT NULL').run(seq - deps.keepReads);
        if (kind !== 'read') {
          prepared(db, 'UPDATE dex_counters SET vends_reset = 0, value_reset = 0, refunds_reset = 0, refunded_reset = 0').run();
        }
        deps.outbox.event('dex.read', { ...header, dex: text }, 'dex');
        options.after?.({ header, text });
        return { header, text };
      },
      'dex_read',
    );
    // After the commit: a cut before this leaves the older mark, which the database is not behind.
    if (deps.markPath)
      writeMark(deps.markPath, {
        read: result.header.read,
        paidCount: result.header.paid.init.count,
        paidValue: result.header.paid.init.value,
      });
    return result;
  }

  return {
    /** Takes a read now (`reset`: a service read that starts a new interval). */
    read(kind: 'read' | 'reset', by: string, options: { afterRestore?: boolean } = {}): DexRead {
      return take(kind, by, options);
    },
    /** A read taken inside a caller's step (a visit records its fills and itself in the same commit). */
    readWith(kind: ReadKind, by: string, inside: () => void, after: (read: DexRead) => void): DexRead {
      return take(kind, by, { inside, after });
    },
    /** A read taken before, as it was sent (null: never taken, or its file is no longer kept). */
    stored(seq: number): DexRead | null {
      const row = prepared(db, 'SELECT header, text FROM dex_reads WHERE seq = ?').get(seq) as
        { header: string; text: string | null } | undefined;
      return row?.text ? { header: JSON.parse(row.header) as DexHeader, text: row.text } : null;
    },
    /**
     * Read `seq` again, exactly as it was sent, published on the `dex` topic with `resent` (when and
     * for whom) beside its own header: a collector that missed it asks again. Counts as no read.
     */
    resend(seq: number, by: string): DexHeader {
      const kept = this.stored(seq);
      if (!kept) {
        throw new VendgateError(
          ErrorCodes.NOT_FOUND,
          `read ${seq} was never taken, or its file is no longer kept (the last ${deps.keepReads} are, dex.keepReads)`,
        );
      }
      // One row: a cut loses the re-send (the collector asks again), never a read.
      deps.outbox.event('dex.read', { ...kept.header, resent: { at: new Date(clock.now()).toISOString(), by }, dex: kept.text }, 'dex');
      return kept.header;
    },
    /** Sales since the last reset per selection, and the selection list (the picklist's inputs). */
    sinceReset(): { selection: string; name: string; sold: number }[] {
      return selections(counters()).map((s) => ({ selection: s.id, name: s.name, sold: s.reset.count }));
    },
  };
}

export type DexAudit = ReturnType<typeof createDexAudit>;
