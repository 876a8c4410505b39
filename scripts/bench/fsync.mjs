#!/usr/bin/env node
/**
 * SD-card cost of one paid-and-vended order, per step, for this build and a baseline commit measured
 * in the same run, side by side: the real service (demo-like: sandbox provider, sim actuator,
 * embedded MQTT) under `strace -f`, driven through the local API and the sandbox pay page. Every
 * fsync/fdatasync and every byte written to the database files is attributed to the step the
 * service's next log line closes (see strace-io.mjs); checkpoint work is recognised by its file.
 *
 * With `--fiscal` the sandbox fiscal register is configured (`fiscal.register: sandbox`, in process;
 * its own file is counted apart, as the register's side), in the builds that have one, and the
 * receipt's claim, call and outcome are a step of their own.
 *
 *   node scripts/bench/fsync.mjs [--orders 30] [--baseline 09b554b] [--fiscal] [--quick]   (after npm run build)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { createServiceProcess, freePort } from '../soak/service.mjs';
import { getJson, postJson, row, sleep, waitFor } from './lib.mjs';
import { baselineBuild } from './baseline.mjs';
import { unitStart } from './resources.mjs';
import { STRACE_ARGS, attribute, markCheckpoints, parseTrace, summarise } from './strace-io.mjs';

// The entry the unit starts (dist/vendgate.js).
const CURRENT_MAIN = unitStart().main;
const SLOTS = ['A1', 'A2', 'B1', 'B2'];

/** Log messages that close a step (the events before them belong to it). */
function closes(message, text) {
  if (message === 'order created') return 'order insert (key, outbox row)';
  if (message === 'sandbox invoice paid') return 'waiting for payment (poll reads)';
  if (message === 'webhook accepted') return 'webhook inbox insert';
  if (message === 'payment observed')
    return text.includes('\\"status\\":\\"paid\\"') ? 'ledger (observation, vend job, outbox)' : 'poll observation (pending)';
  if (message === 'vend firing') return 'vend claim';
  if (message === 'vend settled') return 'actuation + vend settle';
  if (message === 'receipt issued') return 'fiscal receipt (claim, call, issued)';
  return null;
}

export const ORDER_STEPS = [
  'order insert (key, outbox row)',
  'invoice (create answer stored)',
  'poll observation (pending)',
  'waiting for payment (poll reads)',
  'webhook inbox insert',
  'ledger (observation, vend job, outbox)',
  'vend claim',
  'actuation + vend settle',
  'fiscal receipt (claim, call, issued)',
  'outbox publish + ack (after settle)',
  'checkpoint',
  'checkpoint: WAL restart header',
];

function procIo(pid) {
  try {
    return Object.fromEntries(
      readFileSync(`/proc/${pid}/io`, 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split(': '))
        .map(([k, v]) => [k, Number(v)]),
    );
  } catch {
    return null;
  }
}

function tracedPid(stracePid) {
  const children = readFileSync(`/proc/${stracePid}/task/${stracePid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  return Number(children[0]);
}

/** One build: start under strace, N orders, the quiet window, an idle minute, stop; returns the attributed trace. */
async function measureBuild({ label, main, orders, gapMs, quietWindowMs, idleMs, log, fiscal = false }) {
  const dir = mkdtempSync(join(tmpdir(), `vendgate-fsync-${label}-`));
  const [localPort, webhookPort, mqttPort] = [await freePort(), await freePort(), await freePort()];
  // Settings a newer build requires (the local API's order rate limit and double-press window).
  const hasRateLimit = readFileSync(join(dirname(main), 'settings', 'sections', 'service.js'), 'utf8').includes('ordersPerMinute');
  const tracePath = join(dir, 'strace.txt');
  // A fiscal register where the build has one (cecb1e4 has none: it is measured without).
  const withFiscal = fiscal && existsSync(join(dirname(main), 'fiscal', 'index.js'));
  const service = createServiceProcess({
    main,
    wrap: ['strace', ...STRACE_ARGS, '-o', tracePath],
    configPath: join(dir, 'config.yaml'),
    readyTimeoutMs: 60_000,
    config: () => ({
      device: {
        id: 'bench-io',
        mode: 'vending',
        currency: 'MNT',
        catalog: SLOTS.map((slot, i) => ({ slot, name: `Item ${slot}`, price: 1500 + 500 * i })),
      },
      provider: { name: 'sandbox' },
      poll: { intervalMs: 2000 },
      http: {
        local: { host: '127.0.0.1', port: localPort, ...(hasRateLimit ? { ordersPerMinute: 1_000_000, doublePressWindowMs: 0 } : {}) },
        webhook: { host: '127.0.0.1', port: webhookPort },
      },
      storage: { path: join(dir, 'vendgate.db') },
      actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl'), durationMs: 50 } },
      mqtt: { url: 'embedded', embeddedPort: mqttPort },
      log: { level: 'info' },
      ...(withFiscal ? { fiscal: { register: 'sandbox' } } : {}),
    }),
    env: {},
  });
  const localUrl = `http://127.0.0.1:${localPort}`;
  const boundaries = [];
  const mark = (closesStep) => boundaries.push({ t: Date.now(), closes: closesStep });
  let pid = null;
  try {
    await service.start();
    pid = tracedPid(service.pid);
    await sleep(2_000);
    const ioStart = procIo(pid);
    for (let i = 0; i < orders; i += 1) {
      mark(i === 0 ? 'start-up' : 'outbox publish + ack (after settle)');
      const created = await postJson(`${localUrl}/api/orders`, { slot: SLOTS[i % SLOTS.length] });
      if (created.status !== 201) throw new Error(`${label}: create answered ${created.status} ${JSON.stringify(created.body)}`);
      mark('invoice (create answer stored)');
      const paid = await postJson(`${localUrl}/sandbox/pay/${created.body.invoiceId}`);
      if (paid.status >= 300) throw new Error(`${label}: pay answered ${paid.status}`);
      await waitFor(async () => (await getJson(`${localUrl}/api/orders/${created.body.orderId}`)).body.state === 'vended', {
        intervalMs: 20,
        timeoutMs: 60_000,
        what: `${label} order ${created.body.orderId} vended`,
      });
      await sleep(gapMs);
    }
    mark('outbox publish + ack (after settle)');
    const ioOrders = procIo(pid);
    log(`fsync: ${label}: ${orders} orders done; quiet window ${quietWindowMs / 1000} s, then an idle minute`);
    await sleep(quietWindowMs);
    mark('quiet after the last sale');
    const ioIdleStart = procIo(pid);
    await sleep(idleMs);
    mark('idle');
    const ioIdleEnd = procIo(pid);
    process.kill(pid, 'SIGTERM');
    await service.exited();
    await waitFor(() => existsSync(tracePath), { what: 'the trace' });
    await sleep(500);
    const events = markCheckpoints(parseTrace(tracePath));
    for (const e of events)
      if (e.message) {
        const step = closes(e.message, e.text);
        if (step) boundaries.push({ t: e.t, closes: step });
      }
    const window = [boundaries[0].t, boundaries.find((x) => x.closes === 'quiet after the last sale').t];
    const attributed = attribute(events, boundaries, 'stop (close)', window);
    const idleWrites = attributed.filter((e) => e.step === 'idle');
    return {
      label,
      main,
      fiscal: withFiscal,
      orders,
      gapMs,
      quietWindowMs,
      idleMs,
      steps: summarise(attributed, orders),
      idle: {
        bytes: idleWrites.reduce((s, e) => s + e.bytes, 0),
        syncs: idleWrites.filter((e) => e.sync).length,
        minutes: idleMs / 60_000,
        writes: idleWrites.slice(0, 20).map((e) => ({ file: e.file, call: e.call, bytes: e.bytes })),
      },
      proc: {
        ordersWriteBytes: ioStart && ioOrders ? ioOrders.write_bytes - ioStart.write_bytes : null,
        idleWriteBytes: ioIdleStart && ioIdleEnd ? ioIdleEnd.write_bytes - ioIdleStart.write_bytes : null,
      },
    };
  } finally {
    if (pid)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    await service.kill('SIGKILL');
    // FSYNC_KEEP=1 keeps the trace and the database for a look (the path is logged).
    if (process.env.FSYNC_KEEP) log(`fsync: ${label}: kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

const pick = (result, step) =>
  result.steps.find((s) => s.step === step)?.perOrder ?? { dbSyncs: 0, dbBytes: 0, otherSyncs: 0, otherBytes: 0 };
const orderSteps = (result) => ORDER_STEPS.filter((s) => !s.startsWith('checkpoint'));
const sum = (result, steps, key) => steps.reduce((s, step) => s + pick(result, step)[key], 0);
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
const n = (v) => (Math.round(v * 100) / 100).toString();

/** Per order: the steps themselves, plus the checkpoint work of the run spread over its orders. */
export function totals(result) {
  const steps = orderSteps(result);
  const checkpoint = ['checkpoint', 'checkpoint: WAL restart header'];
  const cp = result.steps.filter((s) => checkpoint.includes(s.step));
  const checkpoints = Math.max(1, Math.round(cp.find((s) => s.step === 'checkpoint')?.files.db?.syncs ?? 0));
  return {
    stepSyncs: sum(result, steps, 'dbSyncs'),
    stepBytes: sum(result, steps, 'dbBytes'),
    checkpointSyncs: sum(result, checkpoint, 'dbSyncs'),
    checkpointBytes: sum(result, checkpoint, 'dbBytes'),
    checkpoints: cp.find((s) => s.step === 'checkpoint')?.files.db?.syncs ?? 0,
    perCheckpointSyncs: cp.reduce((s, x) => s + x.dbSyncs, 0) / checkpoints,
    perCheckpointBytes: cp.reduce((s, x) => s + x.dbBytes, 0) / checkpoints,
    helperSyncs: sum(result, steps, 'otherSyncs'),
    helperBytes: sum(result, steps, 'otherBytes'),
  };
}

export async function fsyncBench({ log, quick, orders = quick ? 4 : 30, baseline = '09b554b', gapMs = 1_000, fiscal = false }) {
  if (spawnSync('strace', ['-V']).error)
    throw new Error('strace is not installed (sudo apt-get install strace): it counts the syncs and writes');
  const old = baselineBuild(baseline, log);
  const quietWindowMs = quick ? 5_000 : 65_000;
  const idleMs = quick ? 10_000 : 60_000;
  // Side by side: both builds at once, so the machine's load is the same for both.
  const [after, before] = await Promise.all([
    measureBuild({ label: 'this build', main: CURRENT_MAIN, orders, gapMs, quietWindowMs, idleMs, log, fiscal }),
    measureBuild({ label: `baseline ${old.sha.slice(0, 7)}`, main: old.main, orders, gapMs, quietWindowMs, idleMs, log, fiscal }),
  ]);
  const [a, b] = [totals(after), totals(before)];
  const stepRows = ORDER_STEPS.map((step) => {
    const x = pick(after, step);
    const y = pick(before, step);
    return row(
      `  per order: ${step}`,
      `${n(x.dbSyncs)} syncs, ${kb(x.dbBytes)} (before: ${n(y.dbSyncs)}, ${kb(y.dbBytes)})`,
      'informational',
      null,
    );
  });
  const idlePerMin = after.idle.bytes / after.idle.minutes;
  return {
    name: fiscal ? 'fsync-fiscal' : 'fsync',
    settings: { orders, gapMs, baseline: old.sha, quietWindowMs, idleMs, fiscal: { after: after.fiscal, before: before.fiscal } },
    results: { after, before, totals: { after: a, before: b } },
    rows: [
      row(
        `fsync+fdatasync per paid-and-vended order, webhook path, steps (${orders} orders ${gapMs / 1000} s apart)`,
        `${n(a.stepSyncs)} (before: ${n(b.stepSyncs)})`,
        '≤ 3',
        a.stepSyncs <= 3,
      ),
      row(
        '  plus checkpoints: syncs per checkpoint; checkpoints in the run',
        `${n(a.perCheckpointSyncs)}; ${a.checkpoints} (before: ${n(b.perCheckpointSyncs)}; ${b.checkpoints})`,
        'informational',
        null,
      ),
      row(
        `  per order with its checkpoint share (this run)${fiscal ? `, fiscal register: this build ${after.fiscal ? 'sandbox' : 'none'}, before ${before.fiscal ? 'sandbox' : 'none'}` : ''}`,
        `${n(a.stepSyncs + a.checkpointSyncs)} (before: ${n(b.stepSyncs + b.checkpointSyncs)})`,
        fiscal ? '≤ 3.5' : '≤ 3',
        a.stepSyncs + a.checkpointSyncs <= (fiscal ? 3.5 : 3),
      ),
      row(
        'bytes written to the database files per paid order (WAL + file, checkpoint share included)',
        `${kb(a.stepBytes + a.checkpointBytes)} (before: ${kb(b.stepBytes + b.checkpointBytes)})`,
        '≤ half of before',
        a.stepBytes + a.checkpointBytes <= (b.stepBytes + b.checkpointBytes) / 2,
      ),
      ...stepRows,
      row(
        '  demo helpers per order (sandbox provider db, sim actuator log): syncs, bytes',
        `${n(a.helperSyncs)}, ${kb(a.helperBytes)} (before: ${n(b.helperSyncs)}, ${kb(b.helperBytes)})`,
        'not on a device',
        null,
      ),
      row(
        '  block-device bytes per order, /proc/<pid>/io write_bytes (all files)',
        `${kb((after.proc.ordersWriteBytes ?? NaN) / orders)} (before: ${kb((before.proc.ordersWriteBytes ?? NaN) / orders)})`,
        'informational',
        null,
      ),
      row(
        `bytes written per minute while idle (minute ${quietWindowMs / 1000 + 0} s after the last sale), syncs`,
        `${Math.round(idlePerMin)} B, ${after.idle.syncs} (before: ${Math.round(before.idle.bytes / before.idle.minutes)} B, ${before.idle.syncs})`,
        '0',
        idlePerMin === 0,
      ),
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      orders: { type: 'string' },
      baseline: { type: 'string', default: '09b554b' },
      gap: { type: 'string' },
      fiscal: { type: 'boolean', default: false },
    },
  });
  const result = await fsyncBench({
    log: (l) => process.stderr.write(`${l}\n`),
    quick: values.quick,
    baseline: values.baseline,
    fiscal: values.fiscal,
    ...(values.orders ? { orders: Number(values.orders) } : {}),
    ...(values.gap ? { gapMs: Number(values.gap) } : {}),
  });
  for (const r of result.rows) process.stdout.write(`${r.figure} | ${r.value} | ${r.target}\n`);
  process.stdout.write(
    `${JSON.stringify({ totals: result.results.totals, idle: { after: result.results.after.idle, before: result.results.before.idle } })}\n`,
  );
}
