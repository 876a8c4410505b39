import { existsSync, statSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Settings } from '../../settings/index.js';
import { openDatabase, inTransaction, inspectWal, listMigrations, probeWrite, type Db, type StorageHealth } from '../../store/index.js';
import type { CheckResult } from '../types.js';
import { describeError, fail, pass, warn } from '../helpers.js';

/** Below this the service can no longer be trusted to commit (WAL growth, migrations). */
const DISK_FAIL_MB = 50;

export interface DatabaseCheck {
  result: CheckResult;
  /** Open and healthy enough to read: the pending-problem checks and the stored result use it. */
  db: Db | null;
  /** False when there is no database file yet (the service never started). */
  exists: boolean;
  /** Closes the connection if the selftest opened it (never the service's own). */
  close(): void;
}

const REPLACE_CARD =
  'the card is failing: run sudo vendgate doctor, copy the database off it, replace the SD card and restore the database onto the new one';

function hintFor(err: unknown, path: string): string {
  const code = (err as { code?: string }).code ?? '';
  // A write refused because the kernel turned the card read-only looks like a permissions problem
  // (SQLITE_READONLY, SQLITE_CANTOPEN) or an I/O error to SQLite: the kernel's answer tells them apart.
  if (/^SQLITE_(READONLY|CANTOPEN|IOERR)|^E(ROFS|IO|ACCES)$/.test(code) && path !== ':memory:') {
    const probe = probeWrite(dirname(resolve(path)));
    if (probe === 'EROFS') return `the card holding ${resolve(path)} has turned read-only: ${REPLACE_CARD}`;
    if (probe === 'EIO') return `the card holding ${resolve(path)} reports I/O errors: ${REPLACE_CARD}`;
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return `the file is damaged: stop the service, then \`vendgate db restore BACKUP\` (the latest backup) or \`vendgate db replace\` (a new empty database; the provider's records of this device are kept for a person to settle); each keeps a copy of the damaged file and records what it did; then run the selftest again`;
  }
  if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY' || code === 'SQLITE_PERM' || code === 'EACCES') {
    return `the service user must own the directory: sudo chown -R vendgate:vendgate ${dirname(path)}; run the selftest as that user (sudo -u vendgate …)`;
  }
  if (code === 'SQLITE_BUSY')
    return 'another process held a write lock for more than 5 s: look for a stuck vendgate command (ps aux | grep vendgate)';
  if (code === 'SQLITE_FULL' || code === 'SQLITE_IOERR') return 'the disk is full or failing: check df -h and the SD card';
  return 'see the detail; journalctl -u vendgate -n 50 may say more';
}

/**
 * Opens the database as a second connection (WAL lets it share the file with the running service),
 * runs the integrity check, confirms WAL and that a commit succeeds. A missing file is not created:
 * that is the service's first start, and a file created by the wrong user would lock the service out.
 */
export function checkDatabase(settings: Readonly<Settings>, live: Db | undefined, options: { readonly?: boolean } = {}): DatabaseCheck {
  const name = 'database';
  const path = settings.storage.path;
  const none = { exists: true, close() {} };
  let db: Db;
  let owned = false;
  if (live) {
    db = live;
  } else {
    if (path !== ':memory:' && !existsSync(path)) {
      return {
        ...none,
        exists: false,
        db: null,
        result: warn(
          name,
          `no database yet at ${resolve(path)}`,
          'the service creates it at its first start: sudo systemctl start vendgate',
        ),
      };
    }
    // What the start looks at before SQLite opens the file (src/store/wal.ts): a write-ahead log
    // SQLite would discard. Opening it here would discard it silently and leave the start nothing
    // to notice, so the selftest does not open it and says what the start will do.
    const wal = path === ':memory:' ? null : inspectWal(path);
    if (wal?.discarded) {
      return {
        ...none,
        db: null,
        result: fail(
          name,
          `the write-ahead log ${wal.path} (${wal.bytes} bytes) is unreadable (${wal.discarded}): SQLite would discard it and the commits since the last checkpoint with it; the database was not opened`,
          'do not open the database by hand; start the service (sudo systemctl start vendgate): it keeps a copy of the log and treats the database as restored, so the vends it held are parked for a person (vendgate doctor shows the same)',
        ),
      };
    }
    try {
      db = openDatabase(path, { readonly: options.readonly ?? false });
      owned = true;
    } catch (err) {
      return { ...none, db: null, result: fail(name, `cannot open ${resolve(path)}: ${describeError(err)}`, hintFor(err, path)) };
    }
  }
  const close = () => {
    if (owned && db.open) db.close();
  };
  try {
    // Inside the service the full check would stall its event loop for seconds on a big file.
    const pragma = live ? 'quick_check' : 'integrity_check';
    const problems = (db.pragma(pragma) as Record<string, string>[]).map((row) => Object.values(row)[0]).filter((v) => v !== 'ok');
    if (problems.length > 0) {
      close();
      return {
        ...none,
        db: null,
        result: fail(name, `${pragma} found ${problems.length} problem(s): ${problems[0]}`, hintFor({ code: 'SQLITE_CORRUPT' }, path)),
      };
    }
    const journal = String(db.pragma('journal_mode', { simple: true }));
    if (journal !== 'wal') {
      return {
        exists: true,
        db,
        close,
        result: fail(
          name,
          `journal_mode is ${journal}, not wal`,
          'the service and the selftest share the file safely only in WAL mode: restart the service, which sets it',
        ),
      };
    }
    const version = Number(db.pragma('user_version', { simple: true }));
    const latest = listMigrations().at(-1)?.version ?? 0;
    const size = path === ':memory:' ? 0 : statSync(path).size;
    const schema = version === latest ? `schema ${version}` : `schema ${version} (this build knows ${latest})`;
    if (options.readonly) {
      const detail = `${resolve(path)}: ${pragma} ok, WAL, ${schema}, ${formatMb(size)}; opened read-only (service stopped), write not tried`;
      return { exists: true, db, close, result: pass(name, detail) };
    }
    inTransaction(db, () => {
      db.prepare(
        "INSERT INTO meta (key, value) VALUES ('selftest_write_probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ).run(new Date().toISOString());
      db.prepare("DELETE FROM meta WHERE key = 'selftest_write_probe'").run();
    });
    return { exists: true, db, close, result: pass(name, `${resolve(path)}: ${pragma} ok, WAL, writable, ${schema}, ${formatMb(size)}`) };
  } catch (err) {
    return { exists: true, db: null, close, result: fail(name, `${resolve(path)}: ${describeError(err)}`, hintFor(err, path)) };
  }
}

/**
 * Inside the service: the storage fault it is in (src/store/storage-health.ts), named with the file,
 * the free bytes and what to do; the selftest's own write probe (database line) may pass meanwhile on
 * a disk the ballast was given back on.
 */
export function checkStorage(storage: Pick<StorageHealth, 'fault' | 'describe'>): CheckResult {
  const fault = storage.fault();
  if (!fault) return pass('storage', storage.describe());
  const next =
    fault.kind === 'full'
      ? 'free space: sudo journalctl --vacuum-size=50M, old files under /var/log and /tmp; orders come back by themselves'
      : REPLACE_CARD;
  return fail('storage', `new orders are refused: ${storage.describe()}`, next);
}

export async function checkDisk(settings: Readonly<Settings>): Promise<CheckResult> {
  const name = 'disk';
  const dir = dirname(resolve(settings.storage.path));
  let stats;
  try {
    stats = await statfs(existsSync(dir) ? dir : dirname(dir));
  } catch (err) {
    return warn(name, `cannot read free space of ${dir}: ${describeError(err)}`, 'df -h shows it');
  }
  const freeBytes = stats.bavail * stats.bsize;
  const freeMb = freeBytes / 1024 / 1024;
  const detail = `${formatMb(freeBytes)} free of ${formatMb(stats.blocks * stats.bsize)} on the file system of ${dir}`;
  const hint = 'free space: sudo journalctl --vacuum-size=100M, remove old releases in /opt/vendgate/releases, lower storage.retentionDays';
  if (freeMb < DISK_FAIL_MB) return fail(name, detail, hint);
  if (freeMb < settings.mqtt.diskLowFreeMb) return warn(name, detail, hint);
  return pass(name, detail);
}

function formatMb(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
  return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
}
