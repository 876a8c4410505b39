#!/usr/bin/env node
/**
 * npm run soak -- --orders N --faults all|none|name,… --kill-every S --seed X [--no-mqtt] [--fail-rate P] [--json FILE] [--keep]
 *
 * The real compiled service against the Gerege simulator with every fault, SIGKILL restarts at
 * random moments, a sim actuator that sometimes fails and an MQTT broker that comes and goes. Prints
 * one table and exits non-zero on any violation. Same seed → same customers, faults and kill plan
 * (the interleaving with real time still differs a little from run to run).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runSoak } from './soak/run.mjs';
import { formatTable, soakRows } from './soak/table.mjs';

const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '200' },
    faults: { type: 'string', default: 'all' },
    'kill-every': { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
    'fail-rate': { type: 'string', default: '0.05' },
    'no-mqtt': { type: 'boolean', default: false },
    json: { type: 'string' },
    keep: { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
  },
});

const number = (name, min) => {
  const n = Number(values[name]);
  if (!Number.isFinite(n) || n < min) {
    process.stderr.write(`--${name} must be a number ≥ ${min}\n`);
    process.exit(2);
  }
  return n;
};

const options = {
  orders: number('orders', 1),
  faults: values.faults,
  killEverySec: number('kill-every', 0),
  seed: number('seed', 0),
  failRate: number('fail-rate', 0),
  mqtt: !values['no-mqtt'],
  keepDir: values.keep,
  log: values.quiet ? () => {} : (line) => process.stderr.write(`soak: ${line}\n`),
};
process.stderr.write(
  `soak: ${options.orders} orders, faults ${options.faults}, kill every ~${options.killEverySec} s, seed ${options.seed}\n`,
);
const report = await runSoak(options);
process.stdout.write(`\n${formatTable(soakRows(report))}\n\n`);
process.stdout.write(
  `wall ${(report.wallMs / 1000).toFixed(1)} s (${report.ordersPerSec.toFixed(1)} orders/s), ${report.restarts} restarts (ready in ≤ ${report.readyMs.max} ms), final states ${JSON.stringify(report.byState)}\n`,
);
if (report.dir) process.stdout.write(`kept ${report.dir}\n`);
for (const v of report.violations) process.stdout.write(`VIOLATION: ${v}\n`);
const jsonPath = values.json ?? `bench-results/soak-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
mkdirSync(new URL('../bench-results/', import.meta.url), { recursive: true });
writeFileSync(
  values.json ?? new URL(`../${jsonPath}`, import.meta.url),
  `${JSON.stringify({ date: new Date().toISOString(), ...report }, null, 2)}\n`,
);
process.stdout.write(
  `replay: npm run soak -- --orders ${options.orders} --faults ${options.faults} --kill-every ${options.killEverySec} --seed ${options.seed}\n`,
);
process.exit(report.violations.length === 0 ? 0 : 1);
