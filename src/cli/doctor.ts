import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { loadSettings } from '../settings/index.js';
import { assessLineage, ballastPathFor, cardInfo, databaseDir, freeBytesAt, inspectWal, probeWrite } from '../store/index.js';
import { type CliIo, EXIT, print } from './io.js';

type Status = 'PASS' | 'WARN' | 'FAIL';
interface Finding {
  name: string;
  status: Status;
  detail: string;
  /** What to do: under a WARN or FAIL, or what to compare a PASS with (the card's lifetime writes). Printed whenever present. */
  hint?: string;
}

const MiB = 1024 * 1024;
/** A WAL this large means checkpoints are not happening (the service checkpoints between customers). */
const WAL_LARGE_BYTES = 64 * MiB;

/**
 * `vendgate doctor [--config FILE] [--json]`: the database and the card beneath it, read only (the
 * one write is a probe file beside the database, never the database): integrity, the WAL, free
 * space, the card (read-only after errors, ext4's error count and lifetime writes), and what to do.
 * Runs beside the service or instead of it (after a start refused with exit 74). Exit 0 when no
 * line FAILs, 1 otherwise.
 */
export function doctorCommand(options: { config?: string; json?: boolean }, io: CliIo): number {
  const { settings } = loadSettings({ path: options.config, env: io.env });
  const path = resolve(settings.storage.path);
  const findings = [
    ...databaseFindings(path),
    walFinding(path),
    lineageFinding(path),
    spaceFinding(path, settings.mqtt.diskLowFreeMb * MiB, settings.storage.ballastMb * MiB),
    ...cardFindings(path),
  ];
  const ok = findings.every((f) => f.status !== 'FAIL');
  if (options.json) {
    print(io.stdout, JSON.stringify({ ok, database: path, checks: findings }, null, 2));
    return ok ? EXIT.OK : EXIT.FAILURE;
  }
  const width = Math.max(...findings.map((f) => f.name.length));
  const lines = [`vendgate doctor — ${path}`, ''];
  for (const f of findings) {
    lines.push(`${f.status.padEnd(6)}${f.name.padEnd(width)}  ${f.detail}`);
    if (f.hint) lines.push(`      ${''.padEnd(width)}  → ${f.hint}`);
  }
  lines.push('', ok ? 'OK: nothing failed' : 'NOT OK: fix the FAIL lines (docs/when-the-pi-fails.md)');
  print(io.stdout, lines.join('\n'));
  return ok ? EXIT.OK : EXIT.FAILURE;
}

function databaseFindings(path: string): Finding[] {
  if (!existsSync(path))
    return [
      {
        name: 'database',
        status: 'WARN',
        detail: `no database at ${path}`,
        hint: 'a new device makes it at its first start; a used one: vendgate db restore BACKUP --yes (or vendgate db replace --yes), so the next start knows what happened',
      },
    ];
  const bytes = statSync(path).size;
  let db: Database.Database | null = null;
  try {
    // Read only: a damaged file is looked at, never written (a WAL SQLite rejects stays as it is).
    db = new Database(path, { readonly: true, fileMustExist: true });
    const rows = db.prepare('PRAGMA integrity_check(20)').pluck().all() as string[];
    if (rows.length === 1 && rows[0] === 'ok') return [{ name: 'database', status: 'PASS', detail: `${bytes} bytes, integrity_check ok` }];
    return [
      {
        name: 'database',
        status: 'FAIL',
        detail: `integrity_check: ${rows.slice(0, 5).join('; ')}${rows.length > 5 ? ` (and ${rows.length - 5} more)` : ''}`,
        hint: damagedHint(path),
      },
    ];
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return [
      {
        name: 'database',
        status: 'FAIL',
        detail: `cannot be read: ${typeof code === 'string' ? `${code} ` : ''}${err instanceof Error ? err.message : String(err)}`,
        hint: damagedHint(path),
      },
    ];
  } finally {
    db?.close();
  }
}

function damagedHint(path: string): string {
  return `stop the service (sudo systemctl stop vendgate), then vendgate db restore BACKUP --yes (the last backup, e.g. from ${dirname(path)}/backups/) or vendgate db replace --yes (an empty database): each keeps ${path} and its WAL beside it and records what it did, so the next start raises database_restored or database_replaced and parks the provider's sales it lacks for a person. Never move the files aside by hand: the start could not tell`;
}

/** What the next start will make of the database from its local marks (the provider's records are read at the start itself). */
function lineageFinding(path: string): Finding {
  if (!existsSync(path)) return { name: 'lineage', status: 'PASS', detail: 'no database yet' };
  let db: Database.Database | null = null;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    const finding = assessLineage(db, path, { discardedWal: inspectWal(path).discarded });
    const marks = `database ${finding.marks.dbId}, ${finding.marks.orders} orders, ${finding.marks.events} events`;
    if (!finding.detail)
      return { name: 'lineage', status: 'PASS', detail: `${marks}: the next start finds it ${finding.kind} (${finding.source})` };
    return {
      name: 'lineage',
      status: 'WARN',
      detail: `${marks}: ${finding.detail}`,
      hint: `the next start raises database_${finding.kind} and parks for a person what the provider holds that this database lacks (vendgate db status)`,
    };
  } catch (err) {
    return { name: 'lineage', status: 'WARN', detail: `cannot be read: ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    db?.close();
  }
}

function walFinding(path: string): Finding {
  const wal = inspectWal(path);
  if (wal.discarded)
    return {
      name: 'wal',
      status: 'FAIL',
      detail: `${wal.path} (${wal.bytes} bytes) is unreadable: ${wal.discarded}`,
      hint: 'SQLite will discard it: the commits since the last checkpoint are lost. The next start keeps a copy and treats the database as restored (vends it held are parked for a person): check the machine, then vendgate resolve',
    };
  if (wal.bytes > WAL_LARGE_BYTES)
    return {
      name: 'wal',
      status: 'WARN',
      detail: `${wal.path} is ${wal.bytes} bytes`,
      hint: 'checkpoints are not keeping up: look for a reader holding the database open (vendgate orders/export left running)',
    };
  return { name: 'wal', status: 'PASS', detail: wal.bytes ? `${wal.bytes} bytes, header sound` : 'empty or absent (checkpointed)' };
}

/** The database's directory, or the nearest one above it that exists (a device before its first start). */
function existingDir(path: string): string {
  let dir = databaseDir(path);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

function spaceFinding(path: string, lowBytes: number, ballastBytes: number): Finding {
  const dir = existingDir(path);
  const free = freeBytesAt(dir);
  const ballast = existsSync(ballastPathFor(path));
  const ballastText =
    ballastBytes > 0 ? (ballast ? `; ballast ${ballastBytes / MiB} MiB in place` : '; ballast missing (given back, or no room)') : '';
  if (free === null) return { name: 'free space', status: 'WARN', detail: `cannot read the free space of ${dir}` };
  const freeText = `${free} bytes (${(free / MiB).toFixed(1)} MiB) free in ${dir}${ballastText}`;
  const hint = 'free space: sudo journalctl --vacuum-size=50M, old files under /var/log and /tmp; the service takes orders again by itself';
  if (free < MiB) return { name: 'free space', status: 'FAIL', detail: freeText, hint };
  if (free < lowBytes || (ballastBytes > 0 && !ballast && existsSync(path)))
    return { name: 'free space', status: 'WARN', detail: freeText, hint };
  return { name: 'free space', status: 'PASS', detail: freeText };
}

function cardFindings(path: string): Finding[] {
  const dir = existingDir(path);
  const info = cardInfo(dir);
  const probe = probeWrite(dir);
  const findings: Finding[] = [];
  const where = info ? `${info.device} (${info.fsType}) on ${info.mountPoint}` : dir;
  const replace =
    'the card is failing: copy the database off it (vendgate export, the files themselves), replace the SD card and restore the database onto the new one';
  if (probe === 'EROFS' || info?.readOnly)
    findings.push({ name: 'card', status: 'FAIL', detail: `${where} is read-only${probe ? ` (${probe})` : ''}`, hint: replace });
  else if (probe)
    findings.push({
      name: 'card',
      status: 'FAIL',
      detail: `a write in ${dir} failed: ${probe} on ${where}`,
      hint: probe === 'ENOSPC' ? 'the disk is full: see free space' : replace,
    });
  else findings.push({ name: 'card', status: 'PASS', detail: `${where} takes writes` });
  if (info?.errorsCount)
    findings.push({
      name: 'card errors',
      status: 'FAIL',
      detail: `ext4 recorded ${info.errorsCount} error(s) on ${info.device}${info.firstErrorAt ? `, the first at ${info.firstErrorAt}` : ''}`,
      hint: replace,
    });
  if (info?.lifetimeWriteKbytes != null) {
    const gib = info.lifetimeWriteKbytes / (1024 * 1024);
    findings.push({
      name: 'card writes',
      status: 'PASS',
      detail: `${info.lifetimeWriteKbytes} kB (${gib.toFixed(2)} GiB) written to ${info.device} since the file system was made (ext4 lifetime_write_kbytes)`,
      hint: "compare with the card's rated endurance (its TBW); replace it well before",
    });
  } else {
    findings.push({ name: 'card writes', status: 'PASS', detail: `not known for ${where} (ext4 only)` });
  }
  return findings;
}
