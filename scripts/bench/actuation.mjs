#!/usr/bin/env node
/**
 * Paid → actuation through the webhook, quiet and with a CPU hog on every core.
 *
 *   node scripts/bench/actuation.mjs [--orders 500] [--chunk 50] [--baseline cecb1e4,e62fe96] [--no-hog] [--quick]
 *   node scripts/bench/actuation.mjs --profile [--orders 300]     (after npm run build)
 *   --sim-in-process: the provider simulator in this process, as before 2026-12-06 (see below)
 *   SIM_NODE_ARGS='--trace-gc': node flags for the simulator's own process
 *
 * Besides p50/p90/p99 per build, `byFifth` is the p99 of each fifth of its quiet orders, in order:
 * a tail that grows with the run's length (something accumulating, in the service or the harness)
 * shows there. Until 2026-12-06 the harness had one: it took each order's event from the simulator's
 * records(), a copy of everything the simulator had seen, and the simulator's collections grew with
 * the run (the last fifth of 1,500 orders had a p99 of 16 ms where the first had 8–9).
 *
 * Each baseline is its own one-file build started as its own unit starts it (as startup.mjs does).
 * `--profile`: this build alone under `--cpu-prof`, quiet; then what ran on the service's thread inside
 * the windows (POST sent → actuation) of the slowest 2 % of its orders, against all of them, by
 * file and by function (source-mapped): where the tail's time goes. The .cpuprofile is kept for a
 * flame graph (Chrome DevTools → Performance, or speedscope).
 *
 * The real compiled service (dist/vendgate.js as the unit starts it, with the unit's V8 flags), a Gerege simulator in
 * a process of its own as its provider (scripts/bench/sim-process.mjs: inside this one, it answered the
 * service's GET late whenever this process collected its garbage, and the tail grew with the run's
 * length in every build alike) (without a webhook URL: it only answers the service's GETs), the sim
 * actuator, the embedded MQTT broker, and an open `GET /api/events` stream as the kiosk screen keeps
 * one. Per order: create it on the local API, pay the invoice at the simulator, then POST the
 * simulator's `succeeded` event, signed, to the webhook listener over real HTTP. The figure runs from
 * just before that POST to the `at` of the sim actuator's line — the actuation itself, written by the
 * actuator when it turns the motor. `poll.intervalMs` is 60 s so the poller never wins the race.
 *
 * This build and a baseline commit run side by side, in alternating chunks of orders, so a noisy
 * neighbour on the machine hits both alike. With the hog: one busy-loop child process per core
 * (`os.availableParallelism()`), at the same priority as the service.
 */
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createSimulator, signGeregeWebhook } from '../../dist/simulator/index.js';
import { createServiceProcess, freePort } from '../soak/service.mjs';
import { baselineBuild } from './baseline.mjs';
import { followSimLog, payAndSucceededEvent, percentiles, postJson, row, sleep, waitFor } from './lib.mjs';
import { holdToUnitMemory, unitStart, warnUnlessReleaseNode } from './resources.mjs';
import { buildOf, profileInWindows } from './startup.mjs';
import { readdirSync } from 'node:fs';

const WEBHOOK_SECRET = 'whsec_simulator';
/** The targets: p99 quiet / with a CPU hog on every core. */
export const TARGET_QUIET_P99_MS = 12;
export const TARGET_HOG_P99_MS = 40;

/** The simulator in this process (`--sim-in-process`, the harness before 2026-12-06). */
async function inProcessSimulator() {
  const sim = createSimulator({ provider: 'gerege', seed: 18 });
  await sim.start();
  return {
    url: sim.url,
    paidEvent: (invoiceId) => payAndSucceededEvent(sim, invoiceId),
    stop: () => sim.stop(),
  };
}

/** The simulator in a child process of its own (scripts/bench/sim-process.mjs), as a provider is another machine. */
async function simulatorProcess() {
  // SIM_NODE_ARGS (e.g. --trace-gc): node flags for the simulator's process, to see what it does beside a slow order.
  const child = fork(new URL('./sim-process.mjs', import.meta.url).pathname, [], {
    execArgv: (process.env.SIM_NODE_ARGS ?? '').split(' ').filter(Boolean),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map();
  let next = 0;
  const url = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the simulator process exited (${code}) before it listened`)));
    child.once('message', (message) => resolve(message.url));
  });
  child.on('message', (message) => {
    const settle = waiting.get(message.id);
    waiting.delete(message.id);
    settle?.(message);
  });
  return {
    url,
    async paidEvent(invoiceId) {
      const id = (next += 1);
      const answer = await new Promise((resolve) => {
        waiting.set(id, resolve);
        child.send({ id, op: 'paid', invoiceId });
      });
      if (answer.error) throw new Error(`simulator: ${answer.error}`);
      return answer.event;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ op: 'stop' });
      await exited;
    },
  };
}

export async function startStack({ label, main, nodeArgs, env, onLine, level = 'info', readyTimeoutMs, simInProcess = false }) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-actuation-'));
  const [localPort, webhookPort, mqttPort] = [await freePort(), await freePort(), await freePort()];
  const simLogPath = join(dir, 'actuations.jsonl');
  const sim = simInProcess ? await inProcessSimulator() : await simulatorProcess();
  const service = createServiceProcess({
    main,
    nodeArgs,
    ...(readyTimeoutMs ? { readyTimeoutMs } : {}),
    configPath: join(dir, 'config.yaml'),
    config: () => ({
      device: { id: 'bench-act', mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
      provider: { name: 'gerege', baseUrl: sim.url, clientId: 'sim-client', invoiceTtlSec: 120 },
      poll: { intervalMs: 60_000 },
      http: {
        local: { host: '127.0.0.1', port: localPort, ordersPerMinute: 1_000_000, doublePressWindowMs: 0 },
        webhook: { host: '127.0.0.1', port: webhookPort },
      },
      storage: { path: join(dir, 'vendgate.db') },
      // 0 ms: the figure is the software path, not a simulated motor.
      actuator: { kind: 'sim', sim: { logPath: simLogPath, durationMs: 0 } },
      mqtt: { url: 'embedded', embeddedPort: mqttPort },
      log: { level },
    }),
    onLine,
    env: { ...env, VENDGATE_PROVIDER_CLIENT_SECRET: 'sim-secret', VENDGATE_WEBHOOK_SECRETS: WEBHOOK_SECRET },
  });
  await service.start();
  const localUrl = `http://127.0.0.1:${localPort}`;
  // The kiosk's screen: an SSE subscriber that hears every state change, as on a device.
  const screen = new AbortController();
  const events = await fetch(`${localUrl}/api/events`, { signal: screen.signal });
  void events.body?.pipeTo(new WritableStream()).catch(() => {});
  return {
    label,
    sim,
    newLines: followSimLog(simLogPath),
    seen: new Map(),
    localUrl,
    webhookUrl: `http://127.0.0.1:${webhookPort}/webhooks/gerege`,
    samples: { quiet: [], hog: [] },
    async stop() {
      screen.abort();
      await service.kill('SIGTERM');
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One order, paid and delivered by webhook; returns ms from the POST's send to the actuation. */
export async function oneOrder(stack) {
  const created = await postJson(`${stack.localUrl}/api/orders`, { slot: 'A1' });
  if (created.status !== 201) throw new Error(`${stack.label}: create answered ${created.status} ${JSON.stringify(created.body)}`);
  const { orderId, invoiceId } = created.body;
  const event = await stack.sim.paidEvent(invoiceId);
  if (!event) throw new Error(`${stack.label}: the simulator recorded no succeeded event for ${invoiceId}`);
  const body = JSON.stringify(event);
  const sentAt = Date.now();
  const sentMonoUs = Number(process.hrtime.bigint() / 1000n);
  stack.lastSentAt = sentAt;
  const response = await fetch(stack.webhookUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'gerege-event-id': event.id,
      'gerege-signature': signGeregeWebhook(WEBHOOK_SECRET, body, Math.floor(sentAt / 1000)),
    },
    body,
  });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`${stack.label}: webhook answered ${response.status}`);
  await waitFor(
    () => {
      for (const line of stack.newLines()) stack.seen.set(line.orderId, Date.parse(line.at));
      return stack.seen.has(orderId);
    },
    { intervalMs: 2, timeoutMs: 20_000, what: `${stack.label}: order ${orderId} actuated` },
  );
  // Settled before the next order, so orders do not overlap.
  await waitFor(async () => (await fetch(`${stack.localUrl}/api/orders/${orderId}`).then((r) => r.json())).state === 'vended', {
    intervalMs: 5,
    what: `${stack.label}: order ${orderId} vended`,
  });
  const ms = stack.seen.get(orderId) - sentAt;
  // The window on CLOCK_MONOTONIC (µs) for --profile: from the POST's send to the actuation.
  stack.windows?.push({ ms, window: [sentMonoUs, sentMonoUs + Math.max(1, ms) * 1000] });
  return ms;
}

/** The p99 of each fifth of `samples`, in the order they were taken. */
export function p99ByFifth(samples) {
  const size = Math.ceil(samples.length / 5);
  return Array.from({ length: 5 }, (_, i) => percentiles(samples.slice(i * size, (i + 1) * size)).p99);
}

function startHogs() {
  const hogs = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  return {
    count: hogs.length,
    async stop() {
      await Promise.all(
        hogs.map(
          (child) =>
            new Promise((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once('exit', resolve);
              child.kill('SIGKILL');
            }),
        ),
      );
    },
  };
}

/**
 * Orders in alternating chunks over the stacks; customers arrive at random moments (0–400 ms after
 * the last vend settled), so webhooks also land on the service's timers (checkpoints after 250 ms
 * of quiet, housekeeping each second, the outbox poll).
 */
async function phase(stacks, key, orders, chunk) {
  for (const stack of stacks) await oneOrder(stack); // warm-up of this phase, not counted
  for (let done = 0; done < orders; done += chunk) {
    for (const stack of stacks) {
      for (let i = 0; i < Math.min(chunk, orders - done); i += 1) {
        await sleep(Math.floor(Math.random() * 400));
        stack.samples[key].push(await oneOrder(stack));
      }
    }
  }
}

export async function actuationBench({
  log,
  quick,
  baseline = 'cecb1e4,e62fe96',
  orders: ordersOption,
  chunk: chunkOption,
  hog = true,
  simInProcess = false,
}) {
  const orders = ordersOption ?? (quick ? 20 : 500);
  const chunk = chunkOption ?? (quick ? 10 : 50);
  const refs = String(baseline).split(',').filter(Boolean);
  warnUnlessReleaseNode(log, 'actuation');
  const builds = [buildOf('this build', log), ...refs.map((ref) => buildOf(ref, log))];
  const stacks = [];
  let hogs = null;
  try {
    for (const b of builds)
      stacks.push(
        await startStack({
          label: b.label === 'this build' ? 'this build' : `baseline ${b.label}`,
          main: b.main,
          nodeArgs: b.nodeArgs,
          env: b.env,
          simInProcess,
        }),
      );
    for (const stack of stacks) for (let i = 0; i < 5; i += 1) await oneOrder(stack); // JIT, caches, the provider's token
    await phase(stacks, 'quiet', orders, chunk);
    log(`actuation: quiet, ${orders} orders each`);
    if (hog) {
      hogs = startHogs();
      await sleep(500);
      await phase(stacks, 'hog', orders, chunk);
      log(`actuation: with ${hogs.count} busy-loop processes, ${orders} orders each`);
    }
  } finally {
    await hogs?.stop();
    for (const stack of stacks) await stack.stop();
  }
  const results = Object.fromEntries(
    stacks.map((s) => [
      s.label,
      { quiet: percentiles(s.samples.quiet), hog: percentiles(s.samples.hog), byFifth: p99ByFifth(s.samples.quiet) },
    ]),
  );
  const now = results['this build'];
  const fmt = (p) => `${p.p50} / ${p.p90} / ${p.p99} ms (max ${p.max}, n ${p.n})`;
  const fifths = (label) => results[label].byFifth.join(' / ');
  const others = (key) =>
    stacks
      .slice(1)
      .map((s) => `${s.label}: ${fmt(results[s.label][key])}`)
      .join('; ');
  return {
    name: 'actuation',
    settings: {
      node: process.version,
      orders,
      chunk,
      baselines: refs,
      hogs: hog ? availableParallelism() : 0,
      nodeFlags: builds[0].nodeArgs,
    },
    results,
    rows: [
      row(
        'paid → actuation via webhook (POST sent → sim actuator line), quiet: p50 / p90 / p99',
        `${fmt(now.quiet)} (${others('quiet')})`,
        `p99 ≤ ${TARGET_QUIET_P99_MS} ms`,
        now.quiet.p99 <= TARGET_QUIET_P99_MS,
      ),
      row(
        '  same, p99 of each fifth of the quiet orders in the order they ran (a tail that grows with the run shows here)',
        `${fifths('this build')} ms (${stacks
          .slice(1)
          .map((st) => `${st.label}: ${fifths(st.label)}`)
          .join('; ')})`,
        'flat',
        null,
      ),
      ...(hog
        ? [
            row(
              `  same, a busy-loop process on each of the ${availableParallelism()} cores: p50 / p90 / p99`,
              `${fmt(now.hog)} (${others('hog')})`,
              `p99 ≤ ${TARGET_HOG_P99_MS} ms`,
              now.hog.p99 <= TARGET_HOG_P99_MS,
            ),
          ]
        : []),
    ],
  };
}

/** This build alone under --cpu-prof: what ran inside the slowest orders' windows, against all orders'. */
export async function actuationProfile({ log, orders = 300, simInProcess = false }) {
  const build = buildOf('this build', log);
  const profDir = mkdtempSync(join(tmpdir(), 'vendgate-actuation-prof-'));
  const stack = await startStack({
    label: 'this build (profiled)',
    main: build.main,
    nodeArgs: [...build.nodeArgs, '--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-interval', '250'],
    env: build.env,
    readyTimeoutMs: 60_000,
    simInProcess,
  });
  stack.windows = [];
  try {
    for (let i = 0; i < 5; i += 1) await oneOrder(stack);
    stack.windows.length = 0;
    for (let i = 0; i < orders; i += 1) {
      await sleep(Math.floor(Math.random() * 400));
      stack.samples.quiet.push(await oneOrder(stack));
    }
  } finally {
    await stack.stop();
  }
  await waitFor(() => readdirSync(profDir).some((f) => f.endsWith('.cpuprofile')), {
    what: 'the profile written at exit',
    timeoutMs: 30_000,
  });
  const path = join(
    profDir,
    readdirSync(profDir).find((f) => f.endsWith('.cpuprofile')),
  );
  const byMs = [...stack.windows].sort((a, b) => b.ms - a.ms);
  const slowest = byMs.slice(0, Math.max(3, Math.ceil(byMs.length * 0.02)));
  return {
    path,
    latency: percentiles(stack.samples.quiet),
    slowest: slowest.map((w) => w.ms),
    inSlowest: await profileInWindows(
      path,
      slowest.map((w) => w.window),
    ),
    inAll: await profileInWindows(
      path,
      byMs.map((w) => w.window),
    ),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  holdToUnitMemory();
  const { values } = parseArgs({
    options: {
      orders: { type: 'string' },
      chunk: { type: 'string' },
      baseline: { type: 'string' },
      quick: { type: 'boolean', default: false },
      'no-hog': { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      'sim-in-process': { type: 'boolean', default: false },
    },
  });
  const log = (line) => process.stderr.write(`${line}\n`);
  if (values.profile) {
    const p = await actuationProfile({
      log,
      simInProcess: values['sim-in-process'],
      ...(values.orders ? { orders: Number(values.orders) } : {}),
    });
    const list = (rows) => rows.map(([k, ms]) => `${String(ms).padStart(8)} ms  ${k}`).join('\n');
    process.stdout.write(
      `profile: ${p.path}\nlatency ${JSON.stringify(p.latency)}\nslowest orders (ms): ${p.slowest.join(', ')}\n\n` +
        `inside the slowest orders' windows (${p.inSlowest.totalMs} ms sampled), by file:\n${list(p.inSlowest.byFile.slice(0, 15))}\n\nby function:\n${list(p.inSlowest.byFunction.slice(0, 25))}\n\nby the nearest function of ours on the stack:\n${list(p.inSlowest.byOurs.slice(0, 25))}\n\n` +
        `inside all orders' windows (${p.inAll.totalMs} ms sampled), by file:\n${list(p.inAll.byFile.slice(0, 15))}\n\nby the nearest function of ours:\n${list(p.inAll.byOurs.slice(0, 25))}\n`,
    );
  } else {
    const result = await actuationBench({
      log,
      quick: values.quick,
      hog: !values['no-hog'],
      simInProcess: values['sim-in-process'],
      ...(values.baseline ? { baseline: values.baseline } : {}),
      ...(values.orders ? { orders: Number(values.orders) } : {}),
      ...(values.chunk ? { chunk: Number(values.chunk) } : {}),
    });
    const { loadavg } = await import('node:os');
    for (const r of result.rows)
      process.stdout.write(`${r.figure}: ${r.value} — target ${r.target}${r.ok === null ? '' : r.ok ? ' met' : ' MISSED'}\n`);
    process.stdout.write(
      `${new Date().toISOString()} load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n${JSON.stringify(result.results)}\n`,
    );
  }
}
