import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createServiceProcess, freePort } from '../soak/service.mjs';
import { baselineBuild } from './baseline.mjs';
import { held, holdChildrenTo } from './memory-cgroup.mjs';
import { percentiles, postJson, row, rssMb, sleep, waitFor } from './lib.mjs';

/**
 * Resident memory idle and after 10,000 orders, start-up to ready and idle CPU of the real service
 * in its demo configuration (sandbox provider in process, sim actuator, the embedded MQTT broker),
 * for this build — started with the V8 flags of systemd/vendgate.service, as on a device — and a
 * baseline commit, side by side in the same run, with bare node's HTTP server beside them as the floor.
 *
 * Every process runs on the Node this bench runs on. A device runs the release's Node
 * (scripts/node-runtime.lock, 22.x), whose own executable holds more pages than Node 20's for the same
 * work: take the figures on it, in a copy of the tree whose native modules are built for it —
 *   VENDGATE_BENCH_GIT=$PWD VENDGATE_NODE_LTS_CMD='npm run build && node scripts/bench/resources.mjs' \
 *     bash scripts/ci/node-lts.sh --in /tmp/vendgate-lts 22
 * The bench says so when it runs on another Node than the release's.
 */
export function brokerListening() {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port: 1883 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const ROOT = new URL('../../', import.meta.url).pathname;

/**
 * The entry file of ExecStart (dist/vendgate.js, the bundle), the V8 flags (`VENDGATE_NODE_FLAGS`,
 * and `VENDGATE_NODE22_FLAGS` in older units, expanded in ExecStart), its `MemoryMax=` and the other
 * `Environment=` lines of the unit of the tree at `root` (this checkout, or a baseline's): the bench
 * starts each build the way its own unit starts it on a device.
 */
export function unitStart(root = ROOT) {
  const unitPath = join(root, 'systemd', 'vendgate.service');
  const unit = readFileSync(unitPath, 'utf8');
  const entry = /^ExecStart=.*\/dist\/(\S+\.js) start/m.exec(unit)?.[1];
  if (!entry) throw new Error(`no "ExecStart=… /dist/<file>.js start" in ${unitPath}`);
  const main = join(root, 'dist', entry);
  const env = {};
  for (const [, raw] of unit.matchAll(/^Environment=(.*)$/gm)) {
    const [key, ...rest] = raw.replace(/^"|"$/g, '').split('=');
    env[key] = rest.join('=');
  }
  // VENDGATE_NODE_FLAGS is what ExecStart expands (and VENDGATE_NODE22_FLAGS, in the units of the ninth and tenth rounds).
  const nodeArgs = `${env.VENDGATE_NODE_FLAGS ?? ''} ${env.VENDGATE_NODE22_FLAGS ?? ''}`.split(/\s+/).filter(Boolean);
  delete env.VENDGATE_NODE_FLAGS;
  delete env.VENDGATE_NODE22_FLAGS;
  delete env.NODE_ENV;
  // Node 22's compile cache, in a directory this user may write (the unit's is /var/cache/vendgate).
  if (env.NODE_COMPILE_CACHE) env.NODE_COMPILE_CACHE = join(tmpdir(), 'vendgate-bench-compile-cache');
  const memoryMax = /^MemoryMax=(\d+)([KMG]?)$/m.exec(unit);
  const bytes = memoryMax ? Number(memoryMax[1]) * 1024 ** ' KMG'.indexOf(memoryMax[2] || ' ') : null;
  return { main, nodeArgs, env, memoryMax: bytes };
}

/** The unit's `MemoryMax=` for every service this bench starts from now on (scripts/bench/memory-cgroup.mjs). */
export function holdToUnitMemory(memoryMax = unitStart().memoryMax, log = (line) => process.stderr.write(`bench: ${line}\n`)) {
  return holdChildrenTo(memoryMax, log);
}

/**
 * What the process holds that no other process shares (Private_Clean + Private_Dirty of
 * smaps_rollup, MB): RSS also counts ~40 MB of node's own executable and libraries, file pages the
 * kernel shares and can drop, and that no change to vendgate can make smaller.
 */
export function privateMb(pid) {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
  return Math.round(((kb('Private_Clean') + kb('Private_Dirty')) / 1024) * 10) / 10;
}

/** CPU seconds (user + system) the process has used, from /proc/<pid>/stat. */
export function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function measure({ label, main, nodeArgs, env = {}, quick, orders: ordersOption, log }) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-'));
  const [localPort, webhookPort, mqttPort] = [await freePort(), await freePort(), await freePort()];
  const hasRateLimit = readFileSync(join(main, '..', 'settings', 'sections', 'service.js'), 'utf8').includes('ordersPerMinute');
  const service = createServiceProcess({
    main,
    nodeArgs,
    configPath: join(dir, 'config.yaml'),
    config: () => ({
      device: { id: 'bench-rss', mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
      provider: { name: 'sandbox' },
      http: {
        local: { host: '127.0.0.1', port: localPort, ...(hasRateLimit ? { ordersPerMinute: 1_000_000, doublePressWindowMs: 0 } : {}) },
        webhook: { host: '127.0.0.1', port: webhookPort },
      },
      storage: { path: join(dir, 'vendgate.db') },
      actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl'), durationMs: 0 } },
      mqtt: { url: 'embedded', embeddedPort: mqttPort },
      log: { level: 'info' },
    }),
    env,
  });
  const localUrl = `http://127.0.0.1:${localPort}`;
  try {
    // Start-up to ready: process spawn → "vendgate ready" (the first run also creates the database).
    const readyMs = [];
    for (let i = 0; i < (quick ? 3 : 6); i += 1) {
      readyMs.push((await service.start()).readyMs);
      if (i < (quick ? 2 : 5)) await service.kill('SIGTERM');
    }
    const { pid } = service;
    // 5 s after ready the start-up garbage is still resident; V8 gives it back once the process has
    // been idle a while (its memory reducer). Both are reported; the settled one is the device's idle.
    await sleep(5_000);
    const earlyMb = rssMb(pid);
    const cpuFrom = cpuSeconds(pid);
    const idleSec = quick ? 10 : 55;
    await sleep(idleSec * 1000);
    const idleCpuPerMin = ((cpuSeconds(pid) - cpuFrom) / idleSec) * 60;
    const idleMb = rssMb(pid);
    const idlePrivateMb = privateMb(pid);

    const orders = ordersOption ?? (quick ? 500 : 10_000);
    const started = Date.now();
    const rssAt = {};
    for (let i = 0; i < orders; i += 1) {
      const created = await postJson(`${localUrl}/api/orders`, { slot: 'A1' });
      if (created.status !== 201) throw new Error(`${label}: create answered ${created.status}`);
      await postJson(`${localUrl}/sandbox/pay/${created.body.invoiceId}`);
      await waitFor(async () => (await fetch(`${localUrl}/api/orders/${created.body.orderId}`).then((r) => r.json())).state === 'vended', {
        intervalMs: 2,
        what: 'vended',
      });
      if ((i + 1) % (orders / 5) === 0) {
        rssAt[i + 1] = rssMb(pid);
        log(`resources: ${label}: ${i + 1} orders, RSS ${rssAt[i + 1]} MB`);
      }
    }
    const ordersMs = Date.now() - started;
    await sleep(5_000);
    const afterMb = rssMb(pid);
    const afterPrivateMb = privateMb(pid);
    return {
      label,
      nodeArgs,
      earlyMb,
      idleMb,
      idlePrivateMb,
      afterPrivateMb,
      idleCpuPerMin: Math.round(idleCpuPerMin * 1000) / 1000,
      afterMb,
      rssAt,
      orders,
      ordersMs,
      readyMs,
      firstReadyMs: readyMs[0],
      warmReadyMs: percentiles(readyMs.slice(1)),
    };
  } finally {
    await service.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The Node version a release ships and a device runs (scripts/node-runtime.lock, read as data). */
export function releaseNodeVersion(root = ROOT) {
  return /^version=(\S+)$/m.exec(readFileSync(join(root, 'scripts', 'node-runtime.lock'), 'utf8'))?.[1] ?? null;
}

/**
 * The floor under the idle figure: bare Node's HTTP server listening on 127.0.0.1, started with the
 * same V8 flags and environment as the service, its RSS read after the same idle time. What the
 * service holds above it is vendgate's (its code, heap, SQLite) plus the parts of node's own
 * executable that only vendgate's work touches (V8's optimizing compiler, crypto, the addon loader).
 */
async function measureFloor({ nodeArgs, env, quick }) {
  const child = held(() =>
    spawn(
      process.execPath,
      [
        ...nodeArgs,
        '-e',
        "require('node:http').createServer((q, s) => s.end('ok')).listen(0, '127.0.0.1', () => console.log('listening'))",
      ],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] },
    ),
  );
  try {
    await new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`bare node exited (${code}) before it listened`)));
      child.stdout.once('data', resolve);
    });
    await sleep((quick ? 15 : 60) * 1000);
    return { idleMb: rssMb(child.pid), idlePrivateMb: privateMb(child.pid) };
  } finally {
    child.kill('SIGKILL');
  }
}

/**
 * Logs, and returns, a warning when this bench runs on another Node than the release's: a device's
 * figures are that Node's (its memory differs most, ~11 MB for the same build on Node 22 against 20).
 */
export function warnUnlessReleaseNode(log, bench) {
  const shipped = releaseNodeVersion();
  if (!shipped || process.version === `v${shipped}`) return null;
  const warning =
    `${bench}: running on Node ${process.version}, but a device runs Node v${shipped} (scripts/node-runtime.lock) and ` +
    `its figures differ (node's own executable is larger): docs/benchmarks.md says how to run this bench on it`;
  log(warning);
  return warning;
}

export async function resourcesBench({ log, quick, baseline = 'cecb1e4,e62fe96', orders }) {
  const refs = String(baseline).split(',').filter(Boolean);
  const unit = unitStart();
  const olds = refs.map((ref) => {
    const old = baselineBuild(ref, log);
    const oldUnit = unitStart(old.dir);
    // A baseline whose unit starts the one-file build: its own scripts/bundle.mjs makes it, once.
    if (!existsSync(oldUnit.main) && existsSync(join(old.dir, 'scripts', 'bundle.mjs')))
      execFileSync(process.execPath, [join(old.dir, 'scripts', 'bundle.mjs')], { cwd: old.dir, stdio: 'inherit' });
    return { sha: old.sha, ...oldUnit };
  });
  const flags = [...unit.nodeArgs, ...Object.entries(unit.env).map(([k, v]) => `${k}=${v}`)];
  const shipped = releaseNodeVersion();
  warnUnlessReleaseNode(log, 'resources');
  // Every build at once, and bare node beside them: the machine's load is the same for all.
  const [floor, a, ...bs] = await Promise.all([
    measureFloor({ nodeArgs: unit.nodeArgs, env: unit.env, quick }),
    measure({ label: 'this build', main: unit.main, nodeArgs: unit.nodeArgs, env: unit.env, quick, orders, log }),
    ...olds.map((o) =>
      measure({ label: `baseline ${o.sha.slice(0, 7)}`, main: o.main, nodeArgs: o.nodeArgs, env: o.env, quick, orders, log }),
    ),
  ]);
  const was = (f) => `(${bs.map((b) => `${b.label.replace('baseline ', '')}: ${f(b)}`).join('; ')})`;
  const lastGrowth = (r) => {
    const at = Object.entries(r.rssAt).map(([n, mb]) => [Number(n), mb]);
    return at.length >= 2 ? Math.round((at.at(-1)[1] - at.at(-2)[1]) * 10) / 10 : null;
  };
  return {
    name: 'resources',
    settings: {
      node: process.version,
      releaseNode: shipped ? `v${shipped}` : null,
      mqtt: 'embedded broker',
      nodeFlags: flags,
      baselines: olds.map((o) => o.sha),
      baselineNodeFlags: olds.map((o) => o.nodeArgs),
      orders: a.orders,
    },
    results: { after: a, before: bs[0], baselines: bs, floor },
    rows: [
      row(
        `RSS idle, ${quick ? 10 : 60} s after ready, on Node ${process.version}${shipped && process.version !== `v${shipped}` ? ` (a device runs v${shipped})` : ' (as a device)'} (embedded MQTT, as the unit starts it: ${flags.join(' ') || 'no flags'}); 5 s after ready`,
        `${a.idleMb} MB; ${a.earlyMb} MB ${was((b) => `${b.idleMb}; ${b.earlyMb} MB`)}`,
        '≤ 65 MB',
        a.idleMb <= 65,
      ),
      row(
        '  bare node:http server on the same Node, flags and environment, idle; vendgate above it',
        `${floor.idleMb} MB (private ${floor.idlePrivateMb} MB); +${Math.round((a.idleMb - floor.idleMb) * 10) / 10} MB (private +${Math.round((a.idlePrivateMb - floor.idlePrivateMb) * 10) / 10} MB)`,
        'informational',
        null,
      ),
      row(
        '  private memory (not shared with other processes) idle; after the orders',
        `${a.idlePrivateMb} MB; ${a.afterPrivateMb} MB ${was((b) => `${b.idlePrivateMb}; ${b.afterPrivateMb} MB`)}`,
        'informational',
        null,
      ),
      row(
        `RSS after ${a.orders.toLocaleString('en')} orders (at each fifth: ${Object.values(a.rssAt).join(' / ')})`,
        `${a.afterMb} MB ${was((b) => `${b.afterMb} MB`)}`,
        '≤ 100 MB',
        a.afterMb <= 100,
      ),
      row(
        `  growth over the last fifth (${(a.orders / 5).toLocaleString('en')} orders)`,
        `${lastGrowth(a)} MB ${was((b) => `${lastGrowth(b)} MB`)}`,
        '< 2 MB',
        lastGrowth(a) !== null && lastGrowth(a) < 2,
      ),
      row(
        'start-up to ready (spawn → "vendgate ready"), median of restarts; first start (all builds starting at once: startup.mjs is the figure)',
        `${a.warmReadyMs.p50} ms; ${a.firstReadyMs} ms ${was((b) => `${b.warmReadyMs.p50}; ${b.firstReadyMs} ms`)}`,
        'informational',
        null,
      ),
      row(
        'idle CPU (user + system), per minute',
        `${a.idleCpuPerMin} s ${was((b) => `${b.idleCpuPerMin} s`)}`,
        '≤ 0.15 s',
        a.idleCpuPerMin <= 0.15,
      ),
    ],
  };
}

// node scripts/bench/resources.mjs [--baseline cecb1e4,e62fe96] [--orders 10000] [--quick]   (after npm run build)
if (import.meta.url === `file://${process.argv[1]}`) {
  holdToUnitMemory();
  const { values } = parseArgs({ options: { baseline: { type: 'string' }, quick: { type: 'boolean' }, orders: { type: 'string' } } });
  const { loadavg } = await import('node:os');
  const result = await resourcesBench({
    log: (line) => process.stderr.write(`bench: ${line}\n`),
    quick: values.quick ?? false,
    ...(values.baseline ? { baseline: values.baseline } : {}),
    ...(values.orders ? { orders: Number(values.orders) } : {}),
  });
  for (const r of result.rows) process.stdout.write(`${r.figure}: ${r.value}${r.target ? `  [target ${r.target}]` : ''}\n`);
  process.stdout.write(
    `${new Date().toISOString()} load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n${JSON.stringify(result.results)}\n`,
  );
}
