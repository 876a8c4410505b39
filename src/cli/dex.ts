import { writeFileSync } from 'node:fs';
import { loadSettings } from '../settings/index.js';
import { openDatabase } from '../store/index.js';
import { createOutbox } from '../outbox/index.js';
import { createCatalog, type Catalog } from '../catalog/index.js';
import { dexServiceFor, type DexAudit, type Visits } from '../dex/index.js';
import { systemClock } from '../util/clock.js';
import { silentLogger } from '../util/logger.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';

/**
 * The audit commands on site: `dex` (a read, or a service read with --reset), `visit` (who came,
 * what they filled, and the reset read), `picklist` (what to bring). Like `refill`, they write the
 * database the running service uses; the service publishes their events from the outbox.
 */
function withAudit<T>(config: string | undefined, io: CliIo, run: (audit: DexAudit, visits: Visits, catalog: Catalog) => T): T {
  const { settings } = loadSettings({ path: config, env: io.env });
  const db = openDatabase(settings.storage.path);
  try {
    const outbox = createOutbox({ db, clock: systemClock, deviceId: settings.device.id });
    const catalog = createCatalog({ db, clock: systemClock, logger: silentLogger(), outbox }, settings);
    const { audit, visits } = dexServiceFor(settings, { db, clock: systemClock, outbox, catalog });
    return run(audit, visits, catalog);
  } finally {
    db.close();
  }
}

function output(io: CliIo, text: string, out: string | undefined): void {
  if (out) writeFileSync(out, text, { mode: 0o640 });
  else io.stdout.write(text);
}

/** `vendgate dex [--reset] [--out FILE] [--read N] [--after-restore]`. */
export function dexCommand(
  options: { config?: string; reset?: boolean; out?: string; read?: string; afterRestore?: boolean },
  io: CliIo,
): number {
  if (options.read !== undefined && (!/^\d+$/.test(options.read) || options.reset || options.afterRestore)) {
    throw new UsageError('usage: vendgate dex --read N [--out FILE] (N: the number of a read taken before; alone, without --reset)');
  }
  return withAudit(options.config, io, (audit) => {
    if (options.read !== undefined) {
      const stored = audit.stored(Number(options.read));
      if (!stored) {
        print(io.stderr, `read ${options.read} was never taken, or its file is no longer kept (dex.keepReads)`);
        return EXIT.FAILURE;
      }
      output(io, stored.text, options.out);
      return EXIT.OK;
    }
    const read = audit.read(options.reset ? 'reset' : 'read', 'cli', { afterRestore: options.afterRestore });
    output(io, read.text, options.out);
    if (options.out) print(io.stderr, `read ${read.header.read} (${read.header.kind}) written to ${options.out}`);
    return EXIT.OK;
  });
}

/** `SLOT=COUNT,SLOT=COUNT` → { SLOT: COUNT }. */
export function parseFills(text: string | undefined): Record<string, number> {
  if (text === undefined || text.trim() === '') return {};
  const fills: Record<string, number> = {};
  for (const part of text.split(',')) {
    const match = /^\s*([^=\s]+)\s*=\s*(\d+)\s*$/.exec(part);
    const [, slot, count] = match ?? [];
    if (slot === undefined || count === undefined)
      throw new UsageError(`--fill takes SLOT=COUNT pairs separated by commas, e.g. A1=12,B2=8 (got "${part}")`);
    if (slot in fills) throw new UsageError(`--fill names ${slot} twice`);
    fills[slot] = Number(count);
  }
  return fills;
}

/** `vendgate visit --by NAME [--fill A1=12,B2=8] [--out FILE]`: the visit, then its reset read's DEX. */
export function visitCommand(options: { config?: string; by?: string; fill?: string; out?: string }, io: CliIo): number {
  if (!options.by)
    throw new UsageError('usage: vendgate visit --by NAME [--fill SLOT=COUNT,…] (who came; what each filled slot now holds)');
  const fills = parseFills(options.fill);
  return withAudit(options.config, io, (_audit, visits) => {
    const visit = visits.record(options.by!, fills);
    print(
      io.stderr,
      `visit ${visit.visit} by ${visit.by}: ${Object.keys(fills).length} slot(s) filled; reset read ${visit.read.header.read}`,
    );
    output(io, visit.read.text, options.out);
    return EXIT.OK;
  });
}

/** `vendgate picklist [--json]`: per slot, what to bring at the next visit. */
export function picklistCommand(options: { config?: string; json?: boolean }, io: CliIo): number {
  return withAudit(options.config, io, (_audit, visits) => {
    const rows = visits.picklist();
    if (options.json) {
      print(io.stdout, JSON.stringify({ picklist: rows }, null, 2));
      return EXIT.OK;
    }
    print(io.stdout, 'slot  bring  stock  sold since visit  name');
    for (const r of rows) {
      print(
        io.stdout,
        `${r.selection.padEnd(4)}  ${String(r.bring).padStart(5)}  ${String(r.stock ?? '-').padStart(5)}  ${String(r.sold).padStart(16)}  ${r.name}`,
      );
    }
    return EXIT.OK;
  });
}
