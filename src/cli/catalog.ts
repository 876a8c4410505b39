import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { loadSettings } from '../settings/index.js';
import { openDatabase } from '../store/index.js';
import { createOutbox } from '../outbox/index.js';
import { createCatalog, type Catalog } from '../catalog/index.js';
import { systemClock } from '../util/clock.js';
import { silentLogger } from '../util/logger.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';

/**
 * The technician's and operator's catalog commands. They write the database the running service
 * reads (its screen follows within a second) and the outbox it publishes from, exactly like
 * `vendgate resolve`.
 */
function withCatalog<T>(config: string | undefined, io: CliIo, run: (catalog: Catalog) => T): T {
  const { settings } = loadSettings({ path: config, env: io.env });
  const db = openDatabase(settings.storage.path);
  try {
    const outbox = createOutbox({ db, clock: systemClock, deviceId: settings.device.id });
    return run(createCatalog({ db, clock: systemClock, logger: silentLogger(), outbox }, settings));
  } finally {
    db.close();
  }
}

/** `vendgate stock [--json]`: every slot with its price, counted stock and jam state. */
export function stockCommand(options: { config?: string; json?: boolean }, io: CliIo): number {
  return withCatalog(options.config, io, (catalog) => {
    const applied = catalog.current();
    const rows = catalog.offered().map((item) => ({ ...catalog.slots.get(item.slot), name: item.name, price: item.price }));
    if (options.json) {
      print(io.stdout, JSON.stringify({ catalogVersion: applied.version, slots: rows }, null, 2));
      return EXIT.OK;
    }
    print(io.stdout, `catalog version ${applied.version}`);
    const header = ['slot', 'name', 'price', 'stock', 'state'];
    const table = rows.map((r) => [
      r.slot,
      r.name,
      String(r.price),
      r.stock === null ? 'not counted' : String(r.stock),
      r.jammed
        ? `JAMMED (${r.jamReason ?? ''}) — vendgate clear-jam ${r.slot}`
        : r.stock === 0
          ? 'sold out'
          : r.consecutiveFailures > 0
            ? `${r.consecutiveFailures} failed vend(s) in a row`
            : 'ok',
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    for (const row of [header, ...table])
      print(
        io.stdout,
        row
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      );
    return EXIT.OK;
  });
}

/** `vendgate refill SLOT COUNT`: the items now in the slot. */
export function refillCommand(options: { config?: string; slot?: string; count?: string }, io: CliIo): number {
  const count = Number(options.count);
  if (!options.slot || options.count === undefined || !/^\d+$/.test(options.count))
    throw new UsageError('usage: vendgate refill SLOT COUNT (COUNT: the items now in the slot, e.g. vendgate refill A1 12)');
  return withCatalog(options.config, io, (catalog) => {
    const slot = catalog.slots.refill(options.slot!, count, 'cli');
    print(
      io.stdout,
      `slot ${slot.slot} now holds ${slot.stock}${slot.jammed ? '; it is still JAMMED: vendgate clear-jam ' + slot.slot : ''}`,
    );
    return EXIT.OK;
  });
}

/** `vendgate clear-jam SLOT`: a technician fixed the slot; it is back in sale. */
export function clearJamCommand(options: { config?: string; slot?: string }, io: CliIo): number {
  if (!options.slot) throw new UsageError('usage: vendgate clear-jam SLOT (vendgate stock lists the jammed slots)');
  return withCatalog(options.config, io, (catalog) => {
    const slot = catalog.slots.clearJam(options.slot!, 'cli');
    print(
      io.stdout,
      slot.wasJammed
        ? `slot ${slot.slot} cleared: back in sale, alarm closed`
        : `slot ${slot.slot} was not jammed; its failure count is reset`,
    );
    return EXIT.OK;
  });
}

/** `vendgate catalog [--json] | --apply FILE | --rollback`: show, apply (JSON or YAML) or roll back. */
export function catalogCommand(options: { config?: string; json?: boolean; apply?: string; rollback?: boolean }, io: CliIo): number {
  if (options.apply && options.rollback) throw new UsageError('say one of --apply FILE or --rollback');
  let document: unknown;
  if (options.apply) {
    try {
      document = parseYaml(readFileSync(options.apply, 'utf8'));
    } catch (err) {
      throw new UsageError(`cannot read the catalog document ${options.apply}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return withCatalog(options.config, io, (catalog) => {
    if (options.rollback) {
      const result = catalog.rollback('cli');
      print(io.stdout, `catalog ${result.rolledBack} rolled back; version ${result.version} is in use`);
      return EXIT.OK;
    }
    if (options.apply) {
      const result = catalog.apply(document, 'cli');
      print(
        io.stdout,
        result.changed
          ? `catalog ${result.version} applied (was ${result.previousVersion})`
          : `catalog ${result.version} is already in use`,
      );
      return EXIT.OK;
    }
    const applied = catalog.current();
    if (options.json) {
      print(io.stdout, JSON.stringify(applied, null, 2));
      return EXIT.OK;
    }
    print(io.stdout, `catalog version ${applied.version} (${applied.source}${applied.appliedAt ? `, applied ${applied.appliedAt}` : ''})`);
    for (const item of applied.items) {
      const names = item.names
        ? ` ${Object.entries(item.names)
            .map(([lang, name]) => `${lang}: ${name}`)
            .join(', ')}`
        : '';
      print(io.stdout, `  ${item.slot}  ${item.price}  ${item.name}${names}`);
    }
    return EXIT.OK;
  });
}
