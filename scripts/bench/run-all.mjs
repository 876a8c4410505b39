#!/usr/bin/env node
/**
 * npm run bench [-- --quick] [-- --only latency,rails,actuation,provider-calls,ingest,resources,observe,durability,db-size,fsync,cli,receipt-qr,mdb,http-client]
 *
 * Every benchmark figure that has a target, with its target beside it, measured on this machine, printed as one table
 * and written as JSON to bench-results/bench-<date>.json (and bench-latest.json). Nothing here is a
 * pass/fail test: a missed target is reported, not thrown. Ratios compare against a baseline
 * measured in the same run. --quick shrinks every run (a smoke test of the scripts, not figures).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatTable } from '../soak/table.mjs';
import { machine } from './lib.mjs';
import { latencyBench } from './latency.mjs';
import { railsBench } from './rails.mjs';
import { actuationBench } from './actuation.mjs';
import { providerCallsBench } from './provider-calls.mjs';
import { ingestBench } from './ingest.mjs';
import { resourcesBench } from './resources.mjs';
import { observeBench } from './observe.mjs';
import { durabilityBench } from './durability.mjs';
import { dbSizeBench } from './db-size.mjs';
import { fsyncBench } from './fsync.mjs';
import { cliBench } from './cli.mjs';
import { receiptQrBench } from './receipt-qr.mjs';
import { dexBench } from './dex.mjs';
import { mdbBench } from './mdb.mjs';
import { startupBench } from './startup.mjs';
import { httpClientBench } from './http-client.mjs';

const BENCHES = {
  latency: latencyBench,
  rails: railsBench,
  actuation: actuationBench,
  'provider-calls': providerCallsBench,
  ingest: ingestBench,
  resources: resourcesBench,
  observe: observeBench,
  durability: durabilityBench,
  'db-size': dbSizeBench,
  fsync: fsyncBench,
  'fsync-fiscal': (options) => fsyncBench({ ...options, fiscal: true, baseline: 'e62fe96' }),
  cli: cliBench,
  'receipt-qr': receiptQrBench,
  dex: dexBench,
  mdb: mdbBench,
  startup: startupBench,
  'http-client': httpClientBench,
};

const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } } });
const names = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(BENCHES);
for (const name of names) {
  if (!BENCHES[name]) {
    process.stderr.write(`unknown benchmark "${name}"; known: ${Object.keys(BENCHES).join(', ')}\n`);
    process.exit(2);
  }
}

const log = (line) => process.stderr.write(`bench: ${line}\n`);
const startedAt = new Date();
const results = [];
for (const name of names) {
  const t = Date.now();
  log(`${name}…`);
  try {
    const result = await BENCHES[name]({ log, quick: values.quick });
    results.push({ ...result, ms: Date.now() - t });
  } catch (err) {
    log(`${name} failed: ${err.stack ?? err}`);
    results.push({
      name,
      error: String(err.message ?? err),
      rows: [{ figure: `${name}: benchmark failed`, value: String(err.message ?? err).slice(0, 80), target: '', ok: false }],
      ms: Date.now() - t,
    });
  }
}

const host = machine();
const rows = results.flatMap((r) => r.rows.map((x) => [x.figure, x.value, x.target, x.ok]));
process.stdout.write(
  `\nvendgate benchmarks — ${startedAt.toISOString().slice(0, 10)}, ${host.cpu} × ${host.cpus}, ${host.memoryGb} GB, Node ${host.node}, ${host.platform}${values.quick ? ' (QUICK: smoke run, not figures)' : ''}\n\n`,
);
process.stdout.write(`${formatTable(rows, ['figure', 'value', 'target', 'met'])}\n\n`);
const missed = rows.filter((r) => r[3] === false).length;
process.stdout.write(
  `${rows.filter((r) => r[3] === true).length} targets met, ${missed} missed, ${rows.filter((r) => r[3] === null).length} informational\n`,
);

const out = { date: startedAt.toISOString(), quick: values.quick, machine: host, benches: results };
const dir = new URL('../../bench-results/', import.meta.url);
mkdirSync(dir, { recursive: true });
const file = new URL(`bench-${startedAt.toISOString().replace(/[:.]/g, '-')}${values.quick ? '-quick' : ''}.json`, dir);
writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
if (!values.quick) writeFileSync(new URL('bench-latest.json', dir), `${JSON.stringify(out, null, 2)}\n`);
process.stdout.write(`results: ${file.pathname}\n`);
