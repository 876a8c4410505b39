#!/usr/bin/env node
/**
 * Start-up: spawn → the first `GET /healthz` that answers 200, for this build and each baseline
 * (its own one-file build, started as its own unit starts it), beside bare Node's time to a
 * listening HTTP server, in alternating rounds of the same run (so a busy machine weighs on every
 * build alike). The sandbox demo settings without MQTT (`mqtt.url: ''`): sandbox provider in process,
 * sim actuator.
 *
 *   node scripts/bench/startup.mjs [--rounds 7] [--baseline cecb1e4,e62fe96]      (after npm run build)
 *   node scripts/bench/startup.mjs --cold …   each start (bare node's too) after the kernel's page
 *       cache is dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`, root): a start after a power cut,
 *       every file read from the disk again (node's executable, the bundle, node_modules, the compile
 *       cache, the database). It empties the cache of the whole machine: a bench machine, not a device.
 *   node scripts/bench/startup.mjs --profile [--entry dist/vendgate.js]             one start under --cpu-prof:
 *       where the time goes, per module (self time summed by file: node's own loader, each package,
 *       each src/ directory) and the number of modules loaded; the profile is kept for a flame graph
 *       (open the .cpuprofile in Chrome DevTools → Performance, or speedscope). The bundle's functions
 *       are mapped back to their files through its source map; `--entry dist/main.js` profiles the
 *       unbundled build (each module its own file, and node's loader resolving ~1,000 of them).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { freePort } from '../soak/service.mjs';
import { baselineBuild } from './baseline.mjs';
import { machine, percentiles, row, sleep } from './lib.mjs';
import { held } from './memory-cgroup.mjs';
import { holdToUnitMemory, unitStart, warnUnlessReleaseNode } from './resources.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;

/** A build as its own unit starts it: the bundle (made once with the baseline's own scripts/bundle.mjs), flags, environment. */
export function buildOf(ref, log) {
  if (ref === 'this build') return { label: 'this build', ...unitStart() };
  const old = baselineBuild(ref, log);
  const unit = unitStart(old.dir);
  if (!existsSync(unit.main) && existsSync(join(old.dir, 'scripts', 'bundle.mjs')))
    execFileSync(process.execPath, [join(old.dir, 'scripts', 'bundle.mjs')], { cwd: old.dir, stdio: 'inherit' });
  return { label: old.sha.slice(0, 7), ...unit };
}

function demoConfig(dir, localPort, webhookPort) {
  return {
    device: { id: 'bench-start', mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
    provider: { name: 'sandbox' },
    http: { local: { host: '127.0.0.1', port: localPort }, webhook: { host: '127.0.0.1', port: webhookPort } },
    storage: { path: join(dir, 'vendgate.db') },
    actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl'), durationMs: 0 } },
    mqtt: { url: '' },
    log: { level: 'warn' },
  };
}

/** Polls `url` every 2 ms from the spawn; resolves with the ms until it answered 200. */
export async function untilHealthy(url, child, startedAt, timeoutMs = 60_000) {
  let exited = null;
  child.once('exit', (code, signal) => (exited = { code, signal }));
  for (;;) {
    if (exited) throw new Error(`exited before it answered: ${JSON.stringify(exited)}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await response.arrayBuffer();
      if (response.status === 200) return performance.now() - startedAt;
    } catch {
      /* not listening yet */
    }
    if (performance.now() - startedAt > timeoutMs) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await sleep(2);
  }
}

export async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

const samplesCpu = [];
function cpuMsOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/**
 * Drops the kernel's page cache (after writing back what is dirty), so the next start reads every file
 * from the disk as the first start after a power cut does. Root only: it says so otherwise.
 */
export function dropPageCache() {
  execFileSync('sync');
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '3');
  } catch (err) {
    throw new Error(`--cold drops the page cache through /proc/sys/vm/drop_caches, which needs root: ${err.message}`);
  }
}

/** One start of the service: spawn → /healthz 200. The database exists already (a restart, as after a power cut). */
async function startOnce(build, dir, extraArgs = [], cold = false) {
  const [localPort, webhookPort] = [await freePort(), await freePort()];
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, stringify(demoConfig(dir, localPort, webhookPort)));
  if (cold) dropPageCache();
  let startedAt = 0;
  const child = held(() => {
    startedAt = performance.now();
    return spawn(process.execPath, [...build.nodeArgs, ...extraArgs, build.main, 'start', '--config', configPath], {
      env: { ...process.env, ...build.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  try {
    const ms = await untilHealthy(`http://127.0.0.1:${localPort}/healthz`, child, startedAt);
    // CPU time the process used up to its first answer (user + system, all threads): less bent by a
    // busy machine than the wall time, which also counts the time it waited for a core.
    samplesCpu.push({ label: build.label, ms: cpuMsOf(child.pid) });
    return ms;
  } catch (err) {
    throw new Error(`${build.label}: ${err.message}\n${stderr.slice(-2000)}`);
  } finally {
    await stop(child);
  }
}

/** Bare node: spawn → a listening HTTP server answers. The floor nothing in vendgate can go under. */
async function bareNodeOnce(cold = false) {
  const port = await freePort();
  if (cold) dropPageCache();
  let startedAt = 0;
  const child = held(() => {
    startedAt = performance.now();
    return spawn(process.execPath, ['-e', `require('node:http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`], {
      stdio: 'ignore',
    });
  });
  try {
    return await untilHealthy(`http://127.0.0.1:${port}/`, child, startedAt);
  } finally {
    await stop(child);
  }
}

export async function startupBench({
  log = () => {},
  quick = false,
  rounds = quick ? 3 : 7,
  baselines = ['cecb1e4', 'e62fe96'],
  cold = false,
} = {}) {
  warnUnlessReleaseNode(log, 'startup');
  const builds = [buildOf('this build', log), ...baselines.map((ref) => buildOf(ref, log))];
  const dirs = builds.map(() => mkdtempSync(join(tmpdir(), 'vendgate-startup-')));
  const samples = { 'bare node': [], ...Object.fromEntries(builds.map((b) => [b.label, []])) };
  const first = {};
  try {
    // The first start of each creates its database (and fills a compile cache where the unit sets one): reported apart.
    for (const [i, build] of builds.entries()) first[build.label] = await startOnce(build, dirs[i]);
    await bareNodeOnce();
    for (let round = 0; round < rounds; round += 1) {
      samples['bare node'].push(await bareNodeOnce(cold));
      for (const [i, build] of builds.entries()) samples[build.label].push(await startOnce(build, dirs[i], [], cold));
      log(
        `startup: round ${round + 1}/${rounds}: ${Object.entries(samples)
          .map(([k, v]) => `${k} ${Math.round(v.at(-1))} ms`)
          .join(', ')}`,
      );
    }
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  const p = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, percentiles(v)]));
  const cpu = Object.fromEntries(builds.map((b) => [b.label, percentiles(samplesCpu.filter((x) => x.label === b.label).map((x) => x.ms))]));
  const bare = p['bare node'].p50;
  const now = p['this build'].p50;
  return {
    name: cold ? 'startup-cold' : 'startup',
    machine: machine(),
    load: loadavg(),
    rounds,
    first,
    figures: p,
    cpuMs: cpu,
    rows: [
      row(
        `bare node: spawn → a listening HTTP server answers, median${cold ? ', page cache dropped before each start' : ''}`,
        `${Math.round(bare)} ms`,
      ),
      ...builds.map((b) =>
        row(
          `${b.label}: spawn → /healthz 200, median of ${rounds} restarts${cold ? ', page cache dropped before each' : ''} (first start ${Math.round(first[b.label])} ms)`,
          `${Math.round(p[b.label].p50)} ms (${(p[b.label].p50 / bare).toFixed(2)}× bare node; p90 ${Math.round(p[b.label].p90)} ms; CPU to the answer ${cpu[b.label].p50} ms)`,
          b.label === 'this build' ? '≤ 300 ms, ≤ 2× bare node' : '',
          b.label === 'this build' ? now <= 300 && now <= 2 * bare : null,
        ),
      ),
    ],
  };
}

/**
 * The bundle's functions mapped back to the file they came from through its source map
 * (dist/vendgate*.js.map), so a profile of the one-file build also says which package or src/
 * directory each function is: `url` → the original file's URL. Null where no map or no tracer.
 */
async function sourceMapper() {
  let TraceMap;
  let originalPositionFor;
  try {
    // A development dependency's (vitest's) own dependency: the bench only, never the service.
    ({ TraceMap, originalPositionFor } = await import('@jridgewell/trace-mapping'));
  } catch {
    return null;
  }
  const maps = new Map();
  return (frame) => {
    if (!/\/dist\/vendgate[^/]*\.js$/.test(frame.url)) return frame.url;
    const file = frame.url.replace(/^file:\/\//, '');
    if (!maps.has(file)) maps.set(file, existsSync(`${file}.map`) ? new TraceMap(readFileSync(`${file}.map`, 'utf8')) : null);
    const map = maps.get(file);
    if (!map) return frame.url;
    const at = originalPositionFor(map, { line: frame.lineNumber + 1, column: Math.max(0, frame.columnNumber) });
    if (!at.source) return frame.url;
    return `file://${join(dirname(file), at.source)}`;
  };
}

/** Self time of a .cpuprofile summed per file, then per group: node's loader, each package, each src/ directory. */
export async function summariseProfile(path) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const mapped = await sourceMapper();
  if (mapped) for (const node of profile.nodes) if (node.callFrame.url) node.callFrame.url = mapped(node.callFrame);
  const dt = new Map();
  for (let i = 0; i < profile.samples.length; i += 1) {
    const id = profile.samples[i];
    dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const byUrl = new Map();
  const byGroup = new Map();
  // Node's own work (the loader, built-ins, native calls) charged to the nearest file of ours or of a
  // package above it on the stack: what importing or running that code cost, whoever did the work.
  const byOwner = new Map();
  const parent = new Map();
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const owner = (id) => {
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const url = nodes.get(at).callFrame.url;
      if (url.startsWith('file://')) return groupOf(url);
    }
    const own = nodes.get(id).callFrame;
    return own.url ? "node's loader and bootstrap (no file of ours above)" : `(${own.functionName || 'native'})`;
  };
  let total = 0;
  for (const node of profile.nodes) {
    const ms = dt.get(node.id) ?? 0;
    if (ms === 0) continue;
    total += ms;
    const url = node.callFrame.url || `(${node.callFrame.functionName || 'native'})`;
    byUrl.set(url, (byUrl.get(url) ?? 0) + ms);
    byGroup.set(groupOf(url), (byGroup.get(groupOf(url)) ?? 0) + ms);
    const o = owner(node.id);
    byOwner.set(o, (byOwner.get(o) ?? 0) + ms);
  }
  const sorted = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round(v * 10) / 10]);
  return {
    totalMs: Math.round(total),
    wallMs: Math.round((profile.endTime - profile.startTime) / 1000),
    byGroup: sorted(byGroup),
    byOwner: sorted(byOwner),
    byUrl: sorted(byUrl),
  };
}

/**
 * What ran inside given windows of CLOCK_MONOTONIC time (µs, as `process.hrtime.bigint() / 1000n` reads
 * it in any process: V8's profile timestamps use the same clock on Linux): self time per file and per
 * function, source-mapped. For "what ran beside the slowest vends" (actuation.mjs --profile).
 */
export async function profileInWindows(path, windows) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const mapped = await sourceMapper();
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const sorted = [...windows].sort((a, b) => a[0] - b[0]);
  const byFile = new Map();
  const byFunction = new Map();
  // Each sample charged to the nearest function of ours above it: which of our steps the time
  // (a commit's fsync inside better-sqlite3, a write inside node) was spent for.
  const byOurs = new Map();
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const urlOf = (frame) => (frame.url ? (mapped ? mapped(frame) : frame.url) : '');
  const ours = (id) => {
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const frame = nodes.get(at).callFrame;
      const url = urlOf(frame);
      if (/\/src\//.test(url) && !/node_modules/.test(url))
        return `${url.replace(/^.*\/src\//, 'src/')} ${frame.functionName || '(anonymous)'}`;
    }
    return '(no function of ours on the stack)';
  };
  let t = profile.startTime;
  let total = 0;
  let w = 0;
  for (let i = 0; i < profile.samples.length; i += 1) {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    while (w < sorted.length && sorted[w][1] < t) w += 1;
    if (w >= sorted.length) break;
    if (t < sorted[w][0]) continue;
    const frame = nodes.get(profile.samples[i]).callFrame;
    const url = frame.url ? (mapped ? mapped(frame) : frame.url) : `(${frame.functionName || 'native'})`;
    const ms = delta / 1000;
    total += ms;
    const file = groupOf(url) === url ? url : `${groupOf(url)} ${url.replace(/^.*node_modules\//, '').replace(`file://${ROOT}`, '')}`;
    byFile.set(groupOf(url), (byFile.get(groupOf(url)) ?? 0) + ms);
    const fn = `${file.replace(/^\S+ /, '')} ${frame.functionName || '(anonymous)'}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
    const o = ours(profile.samples[i]);
    byOurs.set(o, (byOurs.get(o) ?? 0) + ms);
  }
  const top = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round(v * 10) / 10]);
  return { totalMs: Math.round(total * 10) / 10, byFile: top(byFile), byFunction: top(byFunction), byOurs: top(byOurs) };
}

function groupOf(url) {
  if (url.startsWith('node:')) return url.startsWith('node:internal/modules') ? "node's module loader" : 'node (other built-ins)';
  if (url.startsWith('(')) return url; // (garbage collector), (program), (idle)
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return `pkg ${pkg[1]}`;
  const rel = relative(ROOT, path);
  const src = /^dist\/([^/]+)\//.exec(rel);
  if (src) return `dist/${src[1]}/`;
  return rel;
}

/** One start under --cpu-prof (the unbundled entry names each module by its file); the profile is written at exit. */
async function profileOnce(entry, log) {
  const build = { ...unitStart(), label: 'profile', main: join(ROOT, entry) };
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-startup-prof-'));
  const profDir = join(dir, 'prof');
  await startOnce(build, dir); // creates the database: the profiled start is a restart
  const ms = await startOnce(build, dir, ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-interval', '200']);
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  const keep = join(tmpdir(), `vendgate-startup-${Date.now()}.cpuprofile`);
  writeFileSync(keep, readFileSync(join(profDir, file)));
  rmSync(dir, { recursive: true, force: true });
  log(`startup: profile of ${entry} kept at ${keep} (its start took ${Math.round(ms)} ms under the profiler)`);
  return { ms, path: keep, ...(await summariseProfile(keep)) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  holdToUnitMemory();
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string' },
      baseline: { type: 'string' },
      quick: { type: 'boolean' },
      cold: { type: 'boolean' },
      profile: { type: 'boolean' },
      entry: { type: 'string', default: 'dist/vendgate.js' },
    },
  });
  const log = (line) => process.stderr.write(`bench: ${line}\n`);
  if (values.profile) {
    const p = await profileOnce(values.entry, log);
    process.stdout.write(`profile: ${p.path}\nsampled ${p.totalMs} ms of ${p.wallMs} ms profiled (to SIGTERM, after /healthz answered)\n`);
    process.stdout.write('self time, by the file that ran:\n');
    for (const [group, ms] of p.byGroup.slice(0, 20)) process.stdout.write(`${String(ms).padStart(8)} ms  ${group}\n`);
    process.stdout.write('\nself time charged to the nearest file of ours or of a package above it (what importing/running it cost):\n');
    for (const [group, ms] of p.byOwner.slice(0, 30)) process.stdout.write(`${String(ms).padStart(8)} ms  ${group}\n`);
    process.stdout.write('\ntop files:\n');
    for (const [url, ms] of p.byUrl.slice(0, 25))
      process.stdout.write(`${String(ms).padStart(8)} ms  ${url.replace(`file://${ROOT}`, '')}\n`);
  } else {
    const result = await startupBench({
      log,
      quick: values.quick ?? false,
      cold: values.cold ?? false,
      ...(values.rounds ? { rounds: Number(values.rounds) } : {}),
      ...(values.baseline ? { baselines: values.baseline.split(',').filter(Boolean) } : {}),
    });
    for (const r of result.rows) process.stdout.write(`${r.figure}: ${r.value}${r.target ? `  [target ${r.target}]` : ''}\n`);
    process.stdout.write(
      `${new Date().toISOString()} ${JSON.stringify(result.machine)} load ${result.load.map((l) => l.toFixed(2)).join(' ')}\n`,
    );
  }
}
