import type { Db } from './open.js';
import {
  deleteMeta,
  logLineage,
  markRestored,
  marksOf,
  META_BACKUP,
  META_DB_ACTION,
  META_EPOCH,
  META_LINEAGE,
  readMeta,
  readSideMark,
  recordMachine,
  writeMeta,
  writeSideMark,
  type LineageMarks,
} from './lineage.js';

/**
 * What a start makes of the database it opened, told apart by the marks of src/store/lineage.ts:
 *
 * - `continuing`: the database this device last ran (or one nothing contradicts);
 * - `restored`: an older copy of it (a backup, a card image, a lost WAL), with how far behind;
 * - `replaced`: another database than the one this device sold with (an empty one after the
 *   files were moved aside, `vendgate db replace`, another device's copy);
 * - `new`: a first database on a device with no sign of an earlier one.
 */
export type LineageKind = 'continuing' | 'restored' | 'replaced' | 'new';

/** Which mark decided. */
export type LineageSource = 'side mark' | 'backup mark' | 'vendgate db' | 'provider records' | 'write-ahead log' | 'database';

export interface LineageFinding {
  kind: LineageKind;
  restored: boolean;
  replaced: boolean;
  cloned: boolean;
  source: LineageSource;
  /** How far behind a restored database is, where a mark says (orders and events it lacks; when its backup was taken). */
  behind: { orders: number | null; events: number | null; backupTakenAt: number | null } | null;
  /** The database this one replaced, when known. */
  previousDbId: string | null;
  /** One sentence for the log line, the alarm and the selftest (null when continuing or new). */
  detail: string | null;
  marks: LineageMarks;
  highWater: number;
}

/** What `vendgate db backup` writes into its copy (META_BACKUP). */
export interface BackupMark extends LineageMarks {
  takenAt: number;
}

/** What `vendgate db restore|replace` writes into the database it puts in place (META_DB_ACTION). */
export interface DbAction {
  action: 'restore' | 'replace';
  at: number;
  /** The database it replaced, as far as it could be read (its marks, or the side mark's). */
  replaced: LineageMarks | null;
  /** Where the one it replaced was kept. */
  keptAt: string | null;
  from?: string;
}

/** The provider's records of this device in the window read (src/channels/lineage-probe.ts). */
export interface RemoteLineage {
  /** The highest order number of this database the provider knows, or null when none. */
  thisDbMaxOrder: number | null;
  /** Other databases of this device the provider knows (it sold with them). */
  otherDbIds: string[];
}

/**
 * The local verdict: side mark, backup mark, a `vendgate db` record, the WAL. Writes nothing;
 * `refineLineage` adds the provider's records and `settleLineage` records the result.
 */
export function assessLineage(db: Db, dbPath: string, options: { discardedWal?: string | null } = {}): LineageFinding {
  const marks = marksOf(db);
  const mark = dbPath === ':memory:' ? null : readSideMark(dbPath);
  const action = readMeta<DbAction>(db, META_DB_ACTION);
  const backup = readMeta<BackupMark>(db, META_BACKUP);
  const startedBefore = readMeta<unknown>(db, META_LINEAGE) !== null;
  const base = { cloned: false, marks, highWater: marks.highWater, previousDbId: null, behind: null };
  const behindOf = (ahead: LineageMarks | null, takenAt: number | null) => ({
    orders: ahead && ahead.dbId === marks.dbId && ahead.orders > 0 ? Math.max(0, ahead.orders - marks.orders) : null,
    events: ahead && ahead.dbId === marks.dbId && ahead.events > 0 ? Math.max(0, ahead.events - marks.events) : null,
    backupTakenAt: takenAt,
  });
  const restored = (source: LineageSource, ahead: LineageMarks | null, takenAt: number | null): LineageFinding =>
    finish({ ...base, kind: 'restored', source, behind: behindOf(ahead, takenAt) });

  // A WAL SQLite discarded took the newest commits (and, before the first checkpoint, the database's
  // very id) with it: the same hazard as a backup put back, whatever the side mark says.
  if (options.discardedWal) return restored('write-ahead log', mark, null);
  if (action?.action === 'replace')
    return finish({ ...base, kind: 'replaced', source: 'vendgate db', previousDbId: action.replaced?.dbId ?? mark?.dbId ?? null });
  if (action?.action === 'restore') return restored('vendgate db', action.replaced ?? mark, backup?.takenAt ?? null);
  if (mark && mark.dbId !== marks.dbId) {
    if (backup && backup.dbId === marks.dbId) return restored('backup mark', mark, backup.takenAt);
    return finish({ ...base, kind: 'replaced', source: 'side mark', previousDbId: mark.dbId });
  }
  if (mark && (marks.orders < mark.orders || marks.events < mark.events || marks.highWater < mark.highWater))
    return restored('side mark', mark, backup?.takenAt ?? null);
  if (backup) return restored('backup mark', mark, backup.takenAt);
  const fresh = !startedBefore && marks.orders === 0;
  return finish({ ...base, kind: fresh && !mark ? 'new' : 'continuing', source: mark ? 'side mark' : 'database' });
}

/**
 * The provider's records added: an order number of this database beyond its own high-water mark
 * means a copy from before those orders (a card image with its side mark, a backup on a new card);
 * a new database on a device whose references the provider holds under another database means the
 * old one was replaced. Nothing here lowers a verdict the local marks reached.
 */
export function refineLineage(finding: LineageFinding, remote: RemoteLineage | null): LineageFinding {
  if (!remote) return finding;
  const { marks } = finding;
  const ahead = remote.thisDbMaxOrder !== null && remote.thisDbMaxOrder > marks.orders ? remote.thisDbMaxOrder - marks.orders : 0;
  if (ahead > 0 && finding.kind !== 'replaced') {
    const orders = Math.max(ahead, finding.behind?.orders ?? 0);
    const behind = { orders, events: finding.behind?.events ?? null, backupTakenAt: finding.behind?.backupTakenAt ?? null };
    return finish({ ...finding, kind: 'restored', source: finding.kind === 'restored' ? finding.source : 'provider records', behind });
  }
  const previous = remote.otherDbIds[0];
  if (finding.kind === 'new' && previous !== undefined)
    return finish({ ...finding, kind: 'replaced', source: 'provider records', previousDbId: previous });
  return finding;
}

function finish(finding: Omit<LineageFinding, 'restored' | 'replaced' | 'detail'>): LineageFinding {
  const restored = finding.kind === 'restored';
  const replaced = finding.kind === 'replaced';
  return { ...finding, restored, replaced, detail: describe(finding) };
}

function describe(finding: Omit<LineageFinding, 'restored' | 'replaced' | 'detail'>): string | null {
  const via = `(from the ${finding.source})`;
  if (finding.kind === 'restored') {
    if (finding.source === 'write-ahead log')
      return `the write-ahead log was unreadable and SQLite discarded it: the commits since the last checkpoint are lost ${via}`;
    const parts: string[] = [];
    const behind = finding.behind;
    if (behind?.orders) parts.push(`${behind.orders} order${behind.orders === 1 ? '' : 's'}`);
    if (behind?.events) parts.push(`${behind.events} event${behind.events === 1 ? '' : 's'}`);
    const taken = behind?.backupTakenAt ? `, backup taken ${new Date(behind.backupTakenAt).toISOString()}` : '';
    const how = parts.length ? `${parts.join(' and ')} behind` : 'behind by an unknown amount';
    return `the database ${finding.marks.dbId} is older than one this device already ran, restored from a backup or an image: ${how}${taken} ${via}`;
  }
  if (finding.kind === 'replaced')
    return `the database ${finding.marks.dbId} replaced ${finding.previousDbId ?? 'another one'} on a device that sold before ${via}`;
  return null;
}

/** The one log line's message. */
export function lineageHeadline(finding: LineageFinding): string {
  switch (finding.kind) {
    case 'continuing':
      return 'database: continuing';
    case 'new':
      return 'database: brand new';
    case 'restored':
      return 'database: restored from a backup';
    case 'replaced':
      return 'database: replaced on a device that sold before';
  }
}

/**
 * Records the verdict in the database (its marks, the epoch of its current life, one line of its
 * history; the marks of `vendgate db` are consumed) and beside it (the side mark, synced). A
 * restored database keeps where it stood for good (`markRestored`), before the money path starts.
 */
export function settleLineage(db: Db, dbPath: string, finding: LineageFinding, context: { now: number; machine: string }): LineageFinding {
  let cloned = false;
  db.transaction(() => {
    const stored = recordMachine(db, context.machine);
    cloned = stored !== null && stored !== context.machine;
    // A replaced database on a device that sold before lost that history: what the provider shows
    // of it is handled as after a restore (a person decides), with nothing of its own behind the mark.
    if (finding.restored || finding.replaced) markRestored(db);
    const epoch = readMeta<number>(db, META_EPOCH);
    if (epoch === null || finding.kind !== 'continuing') writeMeta(db, META_EPOCH, context.now);
    writeMeta(db, META_LINEAGE, { ...finding.marks, at: context.now, kind: finding.kind });
    if (finding.kind !== 'continuing' || readMeta(db, META_BACKUP) !== null)
      logLineage(db, context.now, `start:${finding.kind}`, {
        source: finding.source,
        behind: finding.behind,
        previousDbId: finding.previousDbId,
        detail: finding.detail,
        action: readMeta(db, META_DB_ACTION),
      });
    deleteMeta(db, META_BACKUP);
    deleteMeta(db, META_DB_ACTION);
  }).immediate();
  if (dbPath !== ':memory:') writeSideMark(dbPath, marksOf(db), true);
  if (!cloned) return finding;
  const detail = `${finding.detail ? `${finding.detail}; ` : ''}the database was last used on another machine (a cloned or moved SD card)`;
  return { ...finding, cloned, detail };
}
