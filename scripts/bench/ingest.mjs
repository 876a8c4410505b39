import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { stringify } from 'yaml';
import { freePort } from '../soak/service.mjs';
import { BENCH_WEBHOOK_SECRET as SECRET, row, signedRequest, waitUntilUp } from './lib.mjs';
import { unitStart } from './resources.mjs';

/**
 * Webhook ingest, the service's listener against the naive peer (naive-webhook-server.mjs), in the
 * same run and on equal terms: both open the database through openDatabase (WAL,
 * synchronous=NORMAL, same table), both run the same worker step for each event (look the invoice
 * up among the orders, mark the row processed), both start with the unit's V8 flags, and both get
 * the same signed sandbox events — a new event id on every request, for an invoice of another
 * device. The service runs as on a device (`dist/vendgate.js start` as the unit starts it, one log line per accepted webhook
 * at info, to a pipe nobody reads); MQTT is off on both. Throughput runs alternate between the two
 * (and a bare fastify 204 route in the peer's process) in rounds, so a noisy neighbour hits all
 * alike; then each at a fixed 200 req/s for the p99 there.
 */
const ROOT = new URL('../../', import.meta.url).pathname;

async function cannon(url, path, { connections, duration, rate }) {
  const result = await autocannon({
    url,
    connections,
    duration,
    // A client reconnects when the server ends keep-alive: the listener does after 1,000 requests
    // per socket (http.webhook.maxRequestsPerSocket) and answers 503 to anything sent on it after
    // that, which autocannon would otherwise keep doing. Same for every target.
    reconnectRate: 500,
    ...(rate ? { overallRate: rate } : {}),
    requests: [{ method: 'POST', path, setupRequest: signedRequest }],
  });
  return {
    requests: result.requests.total,
    requestsPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failed: result.non2xx + result.errors + result.timeouts,
  };
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** Starts the service and the peer; returns their URLs and a stop(). `cpuProf` profiles the service (a directory). */
export async function startIngestTargets({ cpuProf } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-ingest-'));
  const [webhookPort, localPort, peerPort] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    stringify({
      device: { id: 'bench-001', mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
      provider: { name: 'sandbox' },
      http: {
        webhook: { host: '127.0.0.1', port: webhookPort },
        local: { host: '127.0.0.1', port: localPort, ordersPerMinute: 1_000_000 },
      },
      storage: { path: join(dir, 'vendgate.db') },
      actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl') } },
      mqtt: { url: '' },
      log: { level: 'info' },
    }),
  );
  const unit = unitStart();
  const profile = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`] : [];
  const service = spawn(process.execPath, [...unit.nodeArgs, ...profile, unit.main, 'start', '--config', config], {
    env: { ...process.env, ...unit.env, VENDGATE_WEBHOOK_SECRETS: SECRET },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Read and dropped, as journald would take it: the service writes its log line per webhook.
  service.stdout.resume();
  const peer = spawn(
    process.execPath,
    [...unit.nodeArgs, join(ROOT, 'scripts/bench/naive-webhook-server.mjs'), String(peerPort), join(dir, 'naive.db'), SECRET],
    { env: { ...process.env, ...unit.env }, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const serviceUrl = `http://127.0.0.1:${webhookPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  await waitUntilUp(`${serviceUrl}/webhooks/health`, service, 'the service');
  const peerHealth = JSON.parse(await waitUntilUp(`${peerUrl}/health`, peer, 'the naive peer'));
  return {
    serviceUrl,
    peerUrl,
    peerSynchronous: peerHealth.synchronous,
    async stop() {
      await Promise.all([stop(service), stop(peer)]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];

export async function ingestBench({ log, quick }) {
  const rounds = quick ? 2 : 4;
  const roundSec = quick ? 2 : 5;
  const connections = 10;
  const rate = 200;
  const targets = await startIngestTargets();
  const listenerPath = [targets.serviceUrl, '/webhooks/sandbox'];
  const peerPath = [targets.peerUrl, '/webhooks/sandbox'];
  const barePath = [targets.peerUrl, '/bare'];
  const total = { listener: [], peer: [], bare: [] };
  let atRate;
  try {
    for (const [url, path] of [listenerPath, peerPath, barePath]) await cannon(url, path, { connections, duration: 2 }); // warm-up
    for (let r = 0; r < rounds; r += 1) {
      // Alternate who goes first, so neither always runs right after the other's writes.
      const order = r % 2 === 0 ? ['listener', 'peer', 'bare'] : ['peer', 'listener', 'bare'];
      for (const who of order) {
        const [url, path] = who === 'listener' ? listenerPath : who === 'peer' ? peerPath : barePath;
        total[who].push(await cannon(url, path, { connections, duration: roundSec }));
      }
    }
    log(`ingest: ${rounds} rounds of ${roundSec} s each`);
    // The fixed rate in alternating rounds too; the figure is the median of each side's per-round p99.
    const runs = { listener: [], peer: [] };
    for (let r = 0; r < rounds - 1; r += 1) {
      for (const who of r % 2 === 0 ? ['listener', 'peer'] : ['peer', 'listener']) {
        runs[who].push(await cannon(...(who === 'listener' ? listenerPath : peerPath), { connections, duration: roundSec, rate }));
      }
    }
    const medianP99 = (list) => [...list.map((x) => x.p99Ms)].sort((a, b) => a - b)[Math.floor(list.length / 2)];
    atRate = {
      runs,
      listener: { p99Ms: medianP99(runs.listener), failed: runs.listener.reduce((s, x) => s + x.failed, 0) },
      peer: { p99Ms: medianP99(runs.peer), failed: runs.peer.reduce((s, x) => s + x.failed, 0) },
    };
  } finally {
    await targets.stop();
  }
  const perSec = (runs) => runs.reduce((s, x) => s + x.requests, 0) / (runs.length * roundSec);
  const [listener, peer, bare] = [perSec(total.listener), perSec(total.peer), perSec(total.bare)];
  const failed = [...total.listener, ...total.peer].reduce((s, x) => s + x.failed, 0);
  const ratio = listener / peer;
  const sync = SYNCHRONOUS[targets.peerSynchronous] ?? String(targets.peerSynchronous);
  return {
    name: 'ingest',
    settings: { rounds, roundSec, connections, rate, synchronous: sync },
    results: { rounds: total, atRate, requestsPerSec: { listener, peer, bare }, ratio, failed },
    rows: [
      row(
        `webhook ingest req/s, the service's listener vs the naive peer (same run, synchronous=${sync} both, same table and worker step)`,
        `${listener.toFixed(0)} vs ${peer.toFixed(0)} (${ratio.toFixed(2)}×)${failed ? `, ${failed} failed` : ''}`,
        '≥ 1.5×',
        ratio >= 1.5 && failed === 0,
      ),
      row(
        `  webhook ingest p99 at ${rate} req/s, listener vs peer (median of ${rounds - 1} alternating rounds)`,
        `${atRate.listener.p99Ms} vs ${atRate.peer.p99Ms} ms`,
        'no worse than the peer',
        atRate.listener.p99Ms <= atRate.peer.p99Ms,
      ),
      row(
        '  listener req/s vs a bare fastify 204 route (same rounds)',
        `${listener.toFixed(0)} vs ${bare.toFixed(0)} (${((listener / bare) * 100).toFixed(0)} %)`,
        '≥ 60 % of bare',
        listener / bare >= 0.6,
      ),
    ],
  };
}
