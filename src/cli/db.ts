import Database from 'better-sqlite3';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadSettings } from '../settings/index.js';
import {
  assessLineage,
  backupDatabase,
  DbFileError,
  readSideMark,
  replaceDatabase,
  restoreDatabase,
  type PutInPlaceOutcome,
} from '../store/index.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';
import { dropToDatabaseOwner } from './selftest.js';

export interface DbOptions {
  action?: string;
  file?: string;
  config?: string;
  to?: string;
  yes?: boolean;
  json?: boolean;
}

const USAGE = 'usage: vendgate db backup [--to FILE] | restore FILE --yes | replace --yes | status [--json]';

/**
 * `vendgate db backup|restore|replace|status`: the one way to back up, restore or replace the
 * database (src/store/db-file.ts). Run as root it becomes the owner of the database directory
 * first, so every file it makes stays the service's. Restore and replace need the service stopped
 * (the instance lock: exit 75 otherwise) and `--yes`; both keep what they replace and record what
 * they did in the database they put in place, so the next start says so and raises the alarm.
 */
export function dbCommand(options: DbOptions, io: CliIo): number {
  const { settings } = loadSettings({ path: options.config, env: io.env });
  const path = resolve(settings.storage.path);
  if (settings.storage.path === ':memory:') throw new UsageError('storage.path is :memory:: there is no database file');
  const dropped = dropToDatabaseOwner(path);
  if (dropped) print(io.stderr, dropped);
  const now = Date.now();
  try {
    switch (options.action) {
      case 'backup': {
        const target = options.to ?? defaultBackupPath(path, now);
        if (!options.to) mkdirSync(dirname(target), { recursive: true, mode: 0o750 });
        const made = backupDatabase(path, target, now);
        print(
          io.stdout,
          `backed up ${path} to ${made.path} (${made.bytes} bytes, integrity ok, synced): database ${made.marks.dbId}, ${made.marks.orders} orders, ${made.marks.events} events`,
        );
        return EXIT.OK;
      }
      case 'restore': {
        const file = options.file;
        if (!file) throw new UsageError(`missing the backup FILE; ${USAGE}`);
        if (!options.yes)
          throw new UsageError(
            `restoring ${file} puts it in place of ${path}: every order since it was taken is gone from this device (the current database is kept beside it). Run again with --yes`,
          );
        return done(io, 'restored', restoreDatabase(path, file, now), path);
      }
      case 'replace':
        if (!options.yes)
          throw new UsageError(
            `replacing ${path} starts this device on a new empty database (the current one is kept beside it; what the provider holds of its sales is left for a person). Run again with --yes`,
          );
        return done(io, 'replaced', replaceDatabase(path, now), path);
      case 'status':
        return status(path, options.json === true, io);
      default:
        throw new UsageError(USAGE);
    }
  } catch (err) {
    if (!(err instanceof DbFileError)) throw err;
    print(io.stderr, `vendgate: ${err.message}; nothing was changed`);
    return EXIT.FAILURE;
  }
}

function defaultBackupPath(path: string, now: number): string {
  const stamp = new Date(now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return join(dirname(path), 'backups', `vendgate-${stamp}.db`);
}

function done(io: CliIo, what: string, outcome: PutInPlaceOutcome, path: string): number {
  const before = outcome.replaced ? `database ${outcome.replaced.dbId} (${outcome.replaced.orders} orders)` : 'no database';
  print(
    io.stdout,
    [
      `${what}: ${path} is now database ${outcome.marks.dbId} (${outcome.marks.orders} orders); it replaced ${before}`,
      outcome.keptAt ? `kept: ${outcome.keptAt}` : 'nothing to keep',
      `recorded in the database: the next start says "database: ${what === 'restored' ? 'restored from a backup' : 'replaced on a device that sold before'}" and raises database_${what}`,
      'next: sudo systemctl start vendgate, then vendgate selftest; sales the provider holds that this database lacks are parked for a person',
    ].join('\n'),
  );
  return EXIT.OK;
}

/** What the next start would make of the database, from the local marks alone (the provider is read at the start). */
function status(path: string, json: boolean, io: CliIo): number {
  if (!existsSync(path)) {
    print(io.stdout, json ? JSON.stringify({ database: path, exists: false, sideMark: readSideMark(path) }) : `no database at ${path}`);
    return EXIT.FAILURE;
  }
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const finding = assessLineage(db, path);
    const history = (
      db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lineage_log'").get()
        ? db.prepare('SELECT at, kind, detail FROM lineage_log ORDER BY id DESC LIMIT 10').all()
        : []
    ) as { at: number; kind: string; detail: string }[];
    const report = {
      database: path,
      dbId: finding.marks.dbId,
      orders: finding.marks.orders,
      events: finding.marks.events,
      sideMark: readSideMark(path),
      nextStart: finding.kind,
      source: finding.source,
      detail: finding.detail,
      history: history.map((row) => ({ at: new Date(row.at).toISOString(), kind: row.kind, detail: JSON.parse(row.detail) as unknown })),
    };
    if (json) print(io.stdout, JSON.stringify(report, null, 2));
    else
      print(
        io.stdout,
        [
          `database ${report.dbId} at ${path}: ${report.orders} orders, ${report.events} events`,
          `side mark: ${report.sideMark ? `database ${report.sideMark.dbId}, ${report.sideMark.orders} orders, ${report.sideMark.events} events` : 'none'}`,
          `the next start (local marks; the provider's records are read then): ${report.nextStart}${report.detail ? ` — ${report.detail}` : ''}`,
          ...report.history.map((h) => `  ${h.at} ${h.kind}`),
        ].join('\n'),
      );
    return EXIT.OK;
  } finally {
    db.close();
  }
}
