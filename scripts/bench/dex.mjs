#!/usr/bin/env node
/**
 * node scripts/bench/dex.mjs [--rows 1000000] [--runs 3]   (after npm run build; npm run bench -- --only dex)
 *
 * A DEX audit read over a big ledger beside `vendgate export` over the same database, in the same
 * run: wall time and peak resident memory of each command, started as a technician starts it (its
 * own process, the compiled CLI, under GNU time), runs alternated so a busy machine weighs on both.
 *
 * The database is made through the real migrations (openDatabase), then filled fast with plain SQL
 * in one transaction: `rows` orders (eight slots at eight prices; 90 % delivered, 5 % refunded
 * after delivery, 5 % failed and refunded) and their history rows, which fire migration 015's
 * counting triggers as the money path's own history rows do. A read uses those running totals, so
 * its cost should not grow with the ledger; export reads every order.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { openDatabase } from '../../dist/store/index.js';
import { machine, percentiles, row } from './lib.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'dist', 'main.js');
const SLOTS = ['A1', 'A2', 'A3', 'A4', 'B1', 'B2', 'B3', 'B4'];
const price = (i) => 1000 + i * 250;

/** The ledger: `rows` orders with their history, in one transaction (the triggers count the vends). */
function fill(path, rows) {
  const db = openDatabase(path);
  try {
    const t0 = Date.now();
    const slot = SLOTS.map((s, i) => `WHEN ${i} THEN '${s}'`).join(' ');
    db.transaction(() => {
      db.prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         INSERT INTO orders (reference, idempotency_key, source, slot, item_name, amount, currency, livemode, provider, capture_mode,
                             state, invoice_id, created_at, updated_at, paid_at, vended_at, refunded_at)
         SELECT 'bench-' || i, 'bench-' || i || '-pay', 'kiosk', CASE i % 8 ${slot} END, 'item ' || (i % 8), 1000 + (i % 8) * 250,
                'MNT', 0, 'sandbox', 'automatic', CASE WHEN i % 20 IN (0, 1) THEN 'refunded' ELSE 'vended' END, 'pi_' || i,
                1700000000000 + i * 1000, 1700000000000 + i * 1000 + 30000, 1700000000000 + i * 1000 + 20000,
                CASE WHEN i % 20 = 1 THEN NULL ELSE 1700000000000 + i * 1000 + 25000 END,
                CASE WHEN i % 20 IN (0, 1) THEN 1700000000000 + i * 1000 + 30000 END
           FROM n`,
      ).run(rows);
      const add = (offset, from, to, where) =>
        db
          .prepare(
            `INSERT INTO order_history (order_id, at, from_state, to_state, reason)
             SELECT id, created_at + ?, ?, ?, 'bench' FROM orders WHERE ${where} ORDER BY id`,
          )
          .run(offset, from, to);
      add(20000, 'awaiting_payment', 'paid', '1');
      add(21000, 'paid', 'vending', '1');
      add(25000, 'vending', 'vended', 'id % 20 <> 1');
      add(25000, 'vending', 'vend_failed', 'id % 20 = 1');
      add(30000, 'vended', 'refunded', 'id % 20 = 0');
      add(30000, 'vend_failed', 'refunded', 'id % 20 = 1');
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    const counted = db.prepare('SELECT sum(vends_init) AS vends, sum(refunds_init) AS refunds FROM dex_counters').get();
    const orders = db.prepare('SELECT count(*) AS n FROM orders').get().n;
    const history = db.prepare('SELECT count(*) AS n FROM order_history').get().n;
    return { ms: Date.now() - t0, orders, history, counted };
  } finally {
    db.close();
  }
}

/** One command under GNU time, its stdout to a file: wall ms, peak RSS MB, the bytes written. */
function once(args, outFile) {
  const fd = openSync(outFile, 'w');
  try {
    const t0 = process.hrtime.bigint();
    const result = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, CLI, ...args], {
      stdio: ['ignore', fd, 'pipe'],
      encoding: 'utf8',
    });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (result.status !== 0) throw new Error(`vendgate ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    const kb = Number(result.stderr.trim().split('\n').at(-1));
    return { ms, rssMb: kb / 1024, bytes: statSync(outFile).size };
  } finally {
    closeSync(fd);
  }
}

export async function dexBench({ log = () => {}, quick = false, rows = quick ? 100_000 : 1_000_000, runs = quick ? 1 : 3 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-dex-'));
  try {
    const path = join(dir, 'vendgate.db');
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      stringify({
        device: {
          id: 'bench-dex',
          mode: 'vending',
          currency: 'MNT',
          catalog: SLOTS.map((s, i) => ({ slot: s, name: `item ${i}`, price: price(i) })),
        },
        provider: { name: 'sandbox' },
        storage: { path },
        mqtt: { url: '' },
        log: { level: 'silent' },
      }),
    );
    log(`filling ${rows} orders`);
    const filled = fill(path, rows);
    log(`filled in ${filled.ms} ms: ${filled.orders} orders, ${filled.history} history rows`);
    const dbMb = statSync(path).size / 2 ** 20;
    const samples = { dex: [], export: [] };
    let dexFile = '';
    for (let i = 0; i < runs; i++) {
      samples.dex.push(once(['dex', '--config', config], join(dir, 'audit.dex')));
      dexFile = readFileSync(join(dir, 'audit.dex'), 'utf8');
      samples.export.push(once(['export', '--config', config], join(dir, 'export.csv')));
      log(`run ${i + 1}: dex ${Math.round(samples.dex.at(-1).ms)} ms, export ${Math.round(samples.export.at(-1).ms)} ms`);
    }
    // The file agrees with the ledger it was made from (a fast wrong read proves nothing).
    const va1 = dexFile
      .split('\r\n')
      .find((l) => l.startsWith('VA1*'))
      .split('*');
    if (Number(va1[2]) !== filled.counted.vends || filled.counted.vends !== rows - rows / 20)
      throw new Error(`the read counts ${va1[2]} vends; the ledger holds ${filled.counted.vends}`);
    const summary = (list) => ({
      ms: percentiles(list.map((s) => s.ms)),
      rssMb: percentiles(list.map((s) => s.rssMb)),
      bytes: list[0].bytes,
    });
    const figures = { rows, history: filled.history, fillMs: filled.ms, dbMb, dex: summary(samples.dex), export: summary(samples.export) };
    const fmt = (s) => `${Math.round(s.ms.p50)} ms, ${s.rssMb.p50.toFixed(1)} MB peak RSS, ${(s.bytes / 1024).toFixed(1)} KiB out`;
    return {
      name: 'dex',
      machine: machine(),
      runs,
      figures,
      rows: [
        row(
          `ledger: orders, history rows, database size`,
          `${rows}, ${filled.history}, ${dbMb.toFixed(0)} MB (made in ${(filled.ms / 1000).toFixed(1)} s)`,
        ),
        row('vendgate dex (a read), median', fmt(figures.dex)),
        row('vendgate export (every order as CSV), median', fmt(figures.export)),
      ],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { rows: { type: 'string' }, runs: { type: 'string' } } });
  const result = await dexBench({
    log: (line) => process.stderr.write(`bench: ${line}\n`),
    ...(values.rows ? { rows: Number(values.rows) } : {}),
    ...(values.runs ? { runs: Number(values.runs) } : {}),
  });
  for (const r of result.rows) process.stdout.write(`${r.figure}: ${r.value}\n`);
  process.stdout.write(
    `${new Date().toISOString()} ${JSON.stringify(result.machine)} load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
}
