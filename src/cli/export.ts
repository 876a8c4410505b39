import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadSettings } from '../settings/index.js';
import { openDatabase } from '../store/index.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { toIso } from '../util/clock.js';
import { type CliIo, EXIT, UsageError } from './io.js';

/** Column order is part of the contract: accounting spreadsheets refer to columns by position. */
export const EXPORT_COLUMNS = [
  'reference',
  'item',
  'slot',
  'amount',
  'currency',
  'provider',
  'provider_invoice_id',
  'state',
  'created_at',
  'paid_at',
  'vended_at',
  'refunded_at',
] as const;

interface ExportRow {
  reference: string;
  item_name: string;
  slot: string | null;
  amount: number;
  currency: string;
  provider: string;
  invoice_id: string | null;
  state: string;
  created_at: number;
  paid_at: number | null;
  vended_at: number | null;
  refunded_at: number | null;
}

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** ISO 8601 date or date-time; without a zone it is UTC (a Pi's local zone is rarely what an accountant assumes). */
export function parseIsoOption(value: string, option: string): number {
  const trimmed = value.trim();
  if (!ISO.test(trimmed))
    throw new UsageError(`${option} must be an ISO 8601 date or time, e.g. 2026-11-01 or 2026-11-01T08:00:00+08:00 (got "${value}")`);
  const zoned = /T/.test(trimmed) && !/(Z|[+-]\d{2}:\d{2})$/.test(trimmed) ? `${trimmed}Z` : trimmed;
  const ms = Date.parse(zoned);
  if (Number.isNaN(ms)) throw new UsageError(`${option}: "${value}" is not a real date`);
  return ms;
}

/** A text cell a spreadsheet would read as a formula (OWASP, CSV injection): = + - @ tab CR, and their full-width forms. */
const FORMULA_START = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;

/**
 * RFC 4180: quote a field that holds a comma, a quote or a line break; double the quotes inside.
 * A text that starts like a formula (a catalog name `=HYPERLINK(…)`) gets a leading `'` and is
 * quoted, as OWASP advises, so a spreadsheet shows it as text. Numbers are numbers (-5 stays -5).
 */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  if (FORMULA_START.test(value)) return `"'${value.replaceAll('"', '""')}"`;
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

export function csvLine(fields: (string | number | null)[]): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

/**
 * `vendgate export [--from ISO] [--to ISO]`: the orders created in [from, to) as CSV on stdout,
 * oldest first, for the operator's accounting. Reads through a read-only connection, so it is safe
 * while the service runs.
 */
export async function exportCommand(options: { config?: string; from?: string; to?: string }, io: CliIo): Promise<number> {
  // Arguments first: a bad option writes nothing, not half a file.
  const from = options.from === undefined ? 0 : parseIsoOption(options.from, '--from');
  const to = options.to === undefined ? Number.MAX_SAFE_INTEGER : parseIsoOption(options.to, '--to');
  if (from >= to) throw new UsageError(`--from must be before --to (the period is from ≤ created < to)`);
  const { settings } = loadSettings({ path: options.config, env: io.env });
  const path = settings.storage.path;
  if (!existsSync(path)) {
    throw new VendgateError(
      ErrorCodes.DATABASE,
      `no database at ${resolve(path)}: wrong --config, or the service never ran on this device`,
    );
  }
  const db = openDatabase(path, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT reference, item_name, slot, amount, currency, provider, invoice_id, state, created_at, paid_at, vended_at, refunded_at
         FROM orders WHERE created_at >= ? AND created_at < ? ORDER BY created_at, id`,
      )
      .iterate(from, to) as IterableIterator<ExportRow>;
    await write(io.stdout, csvLine([...EXPORT_COLUMNS]));
    for (const r of rows) {
      await write(
        io.stdout,
        csvLine([
          r.reference,
          r.item_name,
          r.slot,
          r.amount,
          r.currency,
          r.provider,
          r.invoice_id,
          r.state,
          toIso(r.created_at),
          toIso(r.paid_at),
          toIso(r.vended_at),
          toIso(r.refunded_at),
        ]),
      );
    }
    return EXIT.OK;
  } finally {
    db.close();
  }
}

/** Respects back-pressure: a year of orders piped into a slow consumer does not pile up in memory. */
function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  if (stream.write(text)) return Promise.resolve();
  return new Promise((resolveDrain) => stream.once('drain', () => resolveDrain()));
}
