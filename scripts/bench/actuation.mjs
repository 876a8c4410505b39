#!/usr/bin/env node
/**
 * Paid → actuation through the webhook, quiet and with a CPU hog on every core.
 *
 *   node scripts/bench/actuation.mjs [--orders N] [--baseline REF] [--quick]   (after npm run build)
 *
 * The real compiled service (dist/vendgate.js as the unit starts it, with the unit's V8 flags), a Gerege simulator in
 * this process as its provider (without a webhook URL: it only answers the service's GETs), the sim
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
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createSimulator, signGeregeWebhook } from '../../dist/simulator/index.js';
import { createServiceProcess, freePort } from '../soak/service.mjs';
import { baselineBuild } from './baseline.mjs';
import { followSimLog, percentiles, postJson, row, sleep, waitFor } from './lib.mjs';
import { unitStart } from './resources.mjs';

const WEBHOOK_SECRET = 'whsec_simulator';
/** The targets: p99 quiet / with a CPU hog on every core. */
export const TARGET_QUIET_P99_MS = 12;
export const TARGET_HOG_P99_MS = 40;

export async function startStack({ label, main, nodeArgs, env, onLine, level = 'info', readyTimeoutMs }) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-actuation-'));
  const [localPort, webhookPort, mqttPort] = [await freePort(), await freePort(), await freePort()];
  const simLogPath = join(dir, 'actuations.jsonl');
  const sim = createSimulator({ provider: 'gerege', seed: 18 });
  await sim.start();
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
  await stack.sim.pay(invoiceId);
  const event = stack.sim.records().events.findLast((e) => e.type === 'payment_intent.succeeded' && e.data?.object?.id === invoiceId);
  if (!event) throw new Error(`${stack.label}: the simulator recorded no succeeded event for ${invoiceId}`);
  const body = JSON.stringify(event);
  const sentAt = Date.now();
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
  return stack.seen.get(orderId) - sentAt;
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

export async function actuationBench({ log, quick, baseline = '02e2c0d', orders: ordersOption }) {
  const orders = ordersOption ?? (quick ? 20 : 150);
  const chunk = quick ? 10 : 25;
  const old = baselineBuild(baseline, log);
  const unit = unitStart();
  const stacks = [
    await startStack({ label: 'this build', main: unit.main, nodeArgs: unit.nodeArgs, env: unit.env }),
    await startStack({ label: `baseline ${old.sha.slice(0, 7)}`, main: old.main, nodeArgs: unit.nodeArgs, env: unit.env }),
  ];
  let hogs = null;
  try {
    for (const stack of stacks) for (let i = 0; i < 5; i += 1) await oneOrder(stack); // JIT, caches, the provider's token
    await phase(stacks, 'quiet', orders, chunk);
    log(`actuation: quiet, ${orders} orders each`);
    hogs = startHogs();
    await sleep(500);
    await phase(stacks, 'hog', orders, chunk);
    log(`actuation: with ${hogs.count} busy-loop processes, ${orders} orders each`);
  } finally {
    await hogs?.stop();
    for (const stack of stacks) await stack.stop();
  }
  const [now, before] = stacks.map((s) => ({ quiet: percentiles(s.samples.quiet), hog: percentiles(s.samples.hog) }));
  const fmt = (p) => `${p.p50} / ${p.p99} ms`;
  const was = (p) => `(before: ${fmt(p)})`;
  return {
    name: 'actuation',
    settings: { orders, chunk, baseline: old.sha, hogs: availableParallelism(), nodeFlags: unit.nodeArgs },
    results: { after: now, before },
    rows: [
      row(
        'paid → actuation via webhook (POST sent → sim actuator line), quiet: p50 / p99',
        `${fmt(now.quiet)} ${was(before.quiet)}`,
        `p99 ≤ ${TARGET_QUIET_P99_MS} ms`,
        now.quiet.p99 <= TARGET_QUIET_P99_MS,
      ),
      row(
        `  same, a busy-loop process on each of the ${availableParallelism()} cores: p50 / p99`,
        `${fmt(now.hog)} ${was(before.hog)}`,
        `p99 ≤ ${TARGET_HOG_P99_MS} ms`,
        now.hog.p99 <= TARGET_HOG_P99_MS,
      ),
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { orders: { type: 'string' }, baseline: { type: 'string' }, quick: { type: 'boolean', default: false } },
  });
  const result = await actuationBench({
    log: (line) => process.stderr.write(`${line}\n`),
    quick: values.quick,
    ...(values.baseline ? { baseline: values.baseline } : {}),
    ...(values.orders ? { orders: Number(values.orders) } : {}),
  });
  for (const r of result.rows) process.stdout.write(`${r.figure}: ${r.value} — target ${r.target} ${r.ok ? 'met' : 'MISSED'}\n`);
  process.stdout.write(`${JSON.stringify(result.results)}\n`);
}
