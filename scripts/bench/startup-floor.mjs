#!/usr/bin/env node
/**
 * The floor under vendgate's start-up: what its two heaviest parts cost alone, before any of
 * vendgate's own work. Each probe is a small program bundled here with esbuild (one CommonJS file, as
 * the service's chunks are one file each) and started the way startup.mjs starts the service:
 * spawn → the first `GET /healthz` that answers 200, median of `--rounds` starts in alternating
 * rounds, Node's compile cache on (the unit sets NODE_COMPILE_CACHE).
 *
 *   node scripts/bench/startup-floor.mjs [--rounds 11] [--node /path/to/node]    (default: this node)
 *
 * The probes:
 * - bare node: node:http answering `ok` (startup.mjs's floor);
 * - fastify: one route, no logger (every vendgate listener is a fastify instance);
 * - the settings: the config file read with yaml and checked by vendgate's settings schema (zod,
 *   jitless, as settings/load.ts does), then node:http answering;
 * - both together;
 * - both, with the yaml parser, zod and the settings schema built into a V8 startup snapshot
 *   (`--build-snapshot`, Node ≥ 22) and fastify loaded at run time: Node cannot put node:http's
 *   parser in a snapshot ("global handle not serialized: HTTPParser"), so fastify cannot be in one.
 *   This says what precompiling the rest would save.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { freePort } from '../soak/service.mjs';
import { machine, percentiles } from './lib.mjs';
import { stop, untilHealthy } from './startup.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;

const SETTINGS = `
import { settingsSchema } from './src/settings/schema.ts';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
function checkedSettings() {
  const result = settingsSchema.safeParse(parse(readFileSync(process.env.PROBE_CONFIG, 'utf8')), { jitless: true });
  if (!result.success) { console.error(JSON.stringify(result.error.issues)); process.exit(2); }
  return result.data;
}`;
const FASTIFY = `
function listenFastify(Fastify, id) {
  const app = Fastify({ logger: false });
  app.get('/healthz', async () => ({ status: 'ok', device: id }));
  app.listen({ host: '127.0.0.1', port: Number(process.env.PROBE_PORT) });
}`;
const HTTP = `import { createServer } from 'node:http';
function listenHttp() { createServer((q, s) => s.end('ok')).listen(Number(process.env.PROBE_PORT), '127.0.0.1'); }`;

const PROBES = {
  fastify: `import Fastify from 'fastify';${FASTIFY}\nlistenFastify(Fastify, 'probe');`,
  settings: `${SETTINGS}\n${HTTP}\ncheckedSettings(); listenHttp();`,
  both: `import Fastify from 'fastify';${SETTINGS}${FASTIFY}\nlistenFastify(Fastify, checkedSettings().device.id);`,
  // The snapshot's entry: fastify comes from a second bundle, required when the snapshot runs.
  snapshotEntry: `import { createRequire } from 'node:module';
import { startupSnapshot } from 'node:v8';${SETTINGS}${FASTIFY}
function main() { const id = checkedSettings().device.id; listenFastify(createRequire(process.env.PROBE_FASTIFY)(process.env.PROBE_FASTIFY), id); }
if (startupSnapshot?.isBuildingSnapshot?.()) startupSnapshot.setDeserializeMainFunction(main); else main();`,
  fastifyAlone: `module.exports = require('fastify');`,
};

const CONFIG = (dir) => `device: { id: probe, mode: vending, currency: MNT, catalog: [{ slot: A1, name: Water, price: 1500 }] }
provider: { name: sandbox }
http: { local: { host: 127.0.0.1, port: 18080 }, webhook: { host: 127.0.0.1, port: 18081 } }
storage: { path: ${join(dir, 'vendgate.db')} }
actuator: { kind: sim, sim: { logPath: ${join(dir, 'actuations.jsonl')}, durationMs: 0 } }
mqtt: { url: '' }
`;

async function bundle(dir, name, contents) {
  const outfile = join(dir, `${name}.cjs`);
  await build({
    stdin: { contents, resolveDir: ROOT, loader: 'ts', sourcefile: `${name}.ts` },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile,
    logLevel: 'warning',
  });
  return outfile;
}

async function startOnce(node, args, env) {
  const port = await freePort();
  const startedAt = performance.now();
  const child = spawn(node, args, { env: { ...process.env, ...env, PROBE_PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  try {
    return await untilHealthy(`http://127.0.0.1:${port}/healthz`, child, startedAt, 30_000);
  } catch (err) {
    throw new Error(`${args.join(' ')}: ${err.message}\n${stderr.slice(-1000)}`);
  } finally {
    await stop(child);
  }
}

export async function startupFloor({ node = process.execPath, rounds = 11, log = () => {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-startup-floor-'));
  try {
    writeFileSync(join(dir, 'config.yaml'), CONFIG(dir));
    const files = {};
    for (const [name, contents] of Object.entries(PROBES)) files[name] = await bundle(dir, name, contents);
    const env = {
      NODE_COMPILE_CACHE: join(dir, 'compile-cache'),
      PROBE_CONFIG: join(dir, 'config.yaml'),
      PROBE_FASTIFY: files.fastifyAlone,
    };
    const variants = {
      'bare node (node:http)': [
        '-e',
        `require('node:http').createServer((q, s) => s.end('ok')).listen(+process.env.PROBE_PORT, '127.0.0.1')`,
      ],
      'fastify, one route': [files.fastify],
      "the settings (yaml + vendgate's zod schema + its check), node:http": [files.settings],
      'fastify + the settings': [files.both],
    };
    const blob = join(dir, 'snapshot.blob');
    const built = spawnSync(node, ['--snapshot-blob', blob, '--build-snapshot', files.snapshotEntry], { cwd: dir, encoding: 'utf8' });
    if (built.status === 0) variants['fastify + the settings, yaml/zod/the schema from a startup snapshot'] = ['--snapshot-blob', blob];
    else log(`startup-floor: no snapshot with ${node} (${built.stderr.trim().split('\n').at(-1)}): that row is left out`);
    const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
    for (const args of Object.values(variants)) await startOnce(node, args, env); // fills the compile cache
    for (let round = 0; round < rounds; round += 1) {
      for (const [k, args] of Object.entries(variants)) samples[k].push(await startOnce(node, args, env));
      log(`startup-floor: round ${round + 1}/${rounds}`);
    }
    const figures = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, percentiles(v.map((ms) => Math.round(ms)))]));
    return {
      name: 'startup-floor',
      node,
      version: spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim(),
      machine: machine(),
      load: loadavg(),
      rounds,
      figures,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, node: { type: 'string' } } });
  const result = await startupFloor({
    log: (line) => process.stderr.write(`${line}\n`),
    ...(values.node ? { node: values.node } : {}),
    ...(values.rounds ? { rounds: Number(values.rounds) } : {}),
  });
  const bare = result.figures['bare node (node:http)'].p50;
  process.stdout.write(`${new Date().toISOString()} ${result.version} load ${result.load.map((l) => l.toFixed(2)).join(' ')}\n`);
  for (const [k, p] of Object.entries(result.figures))
    process.stdout.write(`${String(p.p50).padStart(5)} ms (p90 ${p.p90}, ${(p.p50 / bare).toFixed(1)}× bare)  ${k}\n`);
}
