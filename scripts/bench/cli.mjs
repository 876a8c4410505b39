#!/usr/bin/env node
/**
 * node scripts/bench/cli.mjs [--runs 15] [--baseline cecb1e4,e62fe96]   (after npm run build)
 *
 * What a command that is not the service costs, started as the installed `vendgate` starts it
 * (dist/vendgate.js): wall time and peak resident memory of `--version` and
 * `orders --help`, this build beside a baseline bundle built in the same run, runs alternated so a
 * busy machine weighs on both alike. `node -e 0` is the floor: what Node itself costs here.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { baselineBuild } from './baseline.mjs';
import { machine, percentiles, row } from './lib.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;
const COMMANDS = [['--version'], ['orders', '--help']];

/** The baseline's own one-file build (its scripts/bundle.mjs), made once beside its dist/main.js. */
function baselineBundle(ref, log) {
  const { sha, dir } = baselineBuild(ref, log);
  const bundle = join(dir, 'dist', 'vendgate.js');
  if (!existsSync(bundle)) execFileSync(process.execPath, [join(dir, 'scripts', 'bundle.mjs')], { cwd: dir, stdio: 'inherit' });
  return { sha, bundle };
}

/** One run under GNU time: wall milliseconds and peak RSS in MB. */
function once(args) {
  const t0 = process.hrtime.bigint();
  const result = spawnSync('/usr/bin/time', ['-f', '%M', ...args], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  const kb = Number(result.stderr.trim().split('\n').at(-1));
  return { ms, rssMb: kb / 1024 };
}

export async function cliBench({ log = () => {}, quick = false, runs = quick ? 3 : 15, baseline = 'cecb1e4,e62fe96' } = {}) {
  const current = join(ROOT, 'dist', 'vendgate.js');
  if (!existsSync(current)) throw new Error('npm run build first');
  const bases = String(baseline)
    .split(',')
    .filter(Boolean)
    .map((ref) => baselineBundle(ref, log));
  const builds = { now: current, ...Object.fromEntries(bases.map((b) => [b.sha.slice(0, 7), b.bundle])) };
  const samples = { floor: [] };
  for (const command of COMMANDS) for (const build of Object.keys(builds)) samples[`${build} ${command.join(' ')}`] = [];
  for (let i = 0; i < runs; i++) {
    samples.floor.push(once([process.execPath, '-e', '0']));
    for (const command of COMMANDS)
      for (const [build, file] of Object.entries(builds))
        samples[`${build} ${command.join(' ')}`].push(once([process.execPath, file, ...command]));
  }
  const summary = (list) => ({ ms: percentiles(list.map((s) => s.ms)), rssMb: percentiles(list.map((s) => s.rssMb)) });
  const fmt = (s) => `${Math.round(s.ms.p50)} ms, ${s.rssMb.p50.toFixed(1)} MB`;
  const floor = summary(samples.floor);
  const rows = [row('node -e 0 (the floor), median time, RSS', fmt(floor))];
  const figures = { floor };
  for (const command of COMMANDS) {
    const name = command.join(' ');
    const per = Object.fromEntries(Object.keys(builds).map((b) => [b, summary(samples[`${b} ${name}`])]));
    figures[name] = per;
    const now = per.now;
    const version = name === '--version';
    const target = version ? '≤ node -e 0 + 3 MB, ≤ 1.25× its time' : '';
    const ok = version ? now.rssMb.p50 <= floor.rssMb.p50 + 3 && now.ms.p50 <= 1.25 * floor.ms.p50 : null;
    const others = bases.map((b) => `${b.sha.slice(0, 7)}: ${fmt(per[b.sha.slice(0, 7)])}`).join('; ');
    rows.push(
      row(
        `vendgate ${name}: median time, RSS${version ? ` (+${(now.rssMb.p50 - floor.rssMb.p50).toFixed(1)} MB, ${(now.ms.p50 / floor.ms.p50).toFixed(2)}× node -e 0)` : ''}`,
        `${fmt(now)} (${others})`,
        target,
        ok,
      ),
    );
  }
  return { name: 'cli', machine: machine(), runs, baselines: bases.map((b) => b.sha), figures, rows };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { runs: { type: 'string' }, baseline: { type: 'string' }, quick: { type: 'boolean' } } });
  const result = await cliBench({
    log: (line) => process.stderr.write(`bench: ${line}\n`),
    quick: values.quick ?? false,
    ...(values.runs ? { runs: Number(values.runs) } : {}),
    ...(values.baseline ? { baseline: values.baseline } : {}),
  });
  for (const r of result.rows) process.stdout.write(`${r.figure}: ${r.value}${r.target ? `  [target ${r.target}]` : ''}\n`);
  process.stdout.write(
    `${new Date().toISOString()} ${JSON.stringify(result.machine)} load ${(await import('node:os'))
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
}
