import { prepared, type Db } from '../store/index.js';

export interface CatalogVersionRow {
  seq: number;
  version: string;
  document: string;
  source: string;
  applied_at: number;
  rolled_back_at: number | null;
}

export interface SlotStateRow {
  slot: string;
  stock: number | null;
  consecutive_failures: number;
  jammed_at: number | null;
  jam_reason: string | null;
  updated_at: number;
}

/** The SQL of `catalog_versions` and `slot_state` (migration 003). Callers own the transaction. */
export function createCatalogTables(db: Db) {
  return {
    currentVersion(): CatalogVersionRow | undefined {
      return prepared(db, 'SELECT * FROM catalog_versions WHERE rolled_back_at IS NULL ORDER BY seq DESC LIMIT 1').get() as
        CatalogVersionRow | undefined;
    },
    /** The version in force before `seq` (what a rollback of `seq` falls back to); none: the settings' catalog. */
    versionBefore(seq: number): CatalogVersionRow | undefined {
      return prepared(db, 'SELECT * FROM catalog_versions WHERE rolled_back_at IS NULL AND seq < ? ORDER BY seq DESC LIMIT 1').get(seq) as
        CatalogVersionRow | undefined;
    },
    /** Every row that carried this version, oldest first (rolled back ones included). */
    versionRows(version: string): CatalogVersionRow[] {
      return prepared(db, 'SELECT * FROM catalog_versions WHERE version = ? ORDER BY seq').all(version) as CatalogVersionRow[];
    },
    insertVersion(version: string, document: string, source: string, now: number): void {
      prepared(db, 'INSERT INTO catalog_versions (version, document, source, applied_at) VALUES (?, ?, ?, ?)').run(
        version,
        document,
        source,
        now,
      );
    },
    markRolledBack(seq: number, now: number): void {
      prepared(db, 'UPDATE catalog_versions SET rolled_back_at = ? WHERE seq = ?').run(now, seq);
    },
    slot(slot: string): SlotStateRow | undefined {
      return prepared(db, 'SELECT * FROM slot_state WHERE slot = ?').get(slot) as SlotStateRow | undefined;
    },
    slots(): SlotStateRow[] {
      return prepared(db, 'SELECT * FROM slot_state ORDER BY slot').all() as SlotStateRow[];
    },
    /** Writes the whole row (insert or replace): the callers read, decide, then write in one transaction. */
    saveSlot(row: SlotStateRow): void {
      prepared(
        db,
        `INSERT INTO slot_state (slot, stock, consecutive_failures, jammed_at, jam_reason, updated_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (slot) DO UPDATE SET stock = excluded.stock, consecutive_failures = excluded.consecutive_failures,
          jammed_at = excluded.jammed_at, jam_reason = excluded.jam_reason, updated_at = excluded.updated_at`,
      ).run(row.slot, row.stock, row.consecutive_failures, row.jammed_at, row.jam_reason, row.updated_at);
    },
    /** Changes whenever a catalog is applied or rolled back or a slot changes: the app re-draws the screen then. */
    generation(): string {
      const row = prepared(
        db,
        `SELECT (SELECT coalesce(max(seq), 0) || '.' || coalesce(max(rolled_back_at), 0) FROM catalog_versions) AS c,
        (SELECT coalesce(group_concat(slot || ':' || ifnull(stock, '-') || ':' || consecutive_failures || ':' || ifnull(jammed_at, '-')), '') FROM slot_state) AS s`,
      ).get() as { c: string; s: string };
      return `${row.c}/${row.s}`;
    },
  };
}

export type CatalogTables = ReturnType<typeof createCatalogTables>;
