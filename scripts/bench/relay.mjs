#!/usr/bin/env node
/**
 * Fleet-mode figures, measured on this machine in one run, on loopback Mosquitto:
 *   1. relay throughput — verified Gerege webhooks published QoS 1 and acknowledged, per relay
 *      process and per CPU-second of it — beside a bare fastify route;
 *   2. paid → actuation p50/p99 through relay + broker vs through the tunnel (the device's own listener);
 *   3. 1,000 lightweight device subscribers in one process: what the broker delivers per second;
 *   4. relay RSS and start-up.
 *
 *   npm run bench:relay [-- --quick] [-- --duration SEC] [-- --subscribers N] [-- --orders N]
 *
 * Figures, not a test: nothing fails on a missed target. JSON goes to bench-results/relay-*.json.
 */
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import mqtt from 'mqtt';
import { stringify } from 'yaml';
import { createSimulator } from '../../dist/simulator/index.js';
import { createServiceProcess, freePort } from '../soak/service.mjs';
import { followSimLog, machine, percentiles, postJson, rssMb, sleep, waitFor } from './lib.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;
const MAIN = join(ROOT, 'dist/main.js');
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    duration: { type: 'string' },
    subscribers: { type: 'string' },
    orders: { type: 'string' },
    connections: { type: 'string', default: '20' },
  },
});
const QUICK = Boolean(args.quick);
const DURATION = Number(args.duration ?? (QUICK ? 3 : 10));
const SUBSCRIBERS = Number(args.subscribers ?? (QUICK ? 100 : 1_000));
const ORDERS = Number(args.orders ?? (QUICK ? 10 : 40));
const CONNECTIONS = Number(args.connections);
const SECRET = 'whsec_simulator';
const PREFIX = `bench${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'vendgate-relay-bench-'));
const children = new Set();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

function child(argv, options = {}) {
  const proc = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], ...options });
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  return proc;
}
const stop = (proc) =>
  new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve();
    proc.once('exit', resolve);
    proc.kill('SIGTERM');
  });
/** utime + stime of a process in seconds, from /proc (Linux). */
function cpuSec(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function startMosquitto() {
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    `listener ${port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\nmax_inflight_messages 100\n${process.getuid?.() === 0 ? 'user root\n' : ''}`,
  );
  const proc = spawn('/usr/sbin/mosquitto', ['-c', conf], { stdio: 'ignore' });
  children.add(proc);
  const url = `mqtt://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      const c = await mqtt.connectAsync(url, { reconnectPeriod: 0 }).catch(() => null);
      if (c) await c.endAsync();
      return c;
    },
    { what: 'mosquitto' },
  );
  return { url, proc };
}

async function startRelay(brokerUrl, secret = SECRET) {
  const port = await freePort();
  const config = join(dir, `relay-${port}.yaml`);
  writeFileSync(
    config,
    stringify({
      relay: { id: `bench-${port}`, host: '127.0.0.1', port, providers: ['gerege'] },
      mqtt: { url: brokerUrl, prefix: PREFIX },
      log: { level: 'warn' },
    }),
  );
  const startedAt = Date.now();
  const proc = child([MAIN, 'relay', '--config', config], { env: { ...process.env, VENDGATE_WEBHOOK_SECRETS: secret } });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/webhooks/health`).catch(() => null))?.status === 200, {
    what: 'relay healthy',
    intervalMs: 2,
  });
  return { url, proc, startupMs: Date.now() - startedAt };
}

function signedGerege(reference) {
  const id = `evt_${randomBytes(10).toString('hex')}`;
  const t = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    id,
    object: 'event',
    type: 'payment_intent.succeeded',
    livemode: false,
    created: t,
    data: {
      object: {
        id: `pi_${randomBytes(8).toString('hex')}`,
        object: 'payment_intent',
        status: 'succeeded',
        amount: 1500,
        currency: 'MNT',
        reference,
      },
    },
  });
  const v1 = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex');
  return { body, headers: { 'content-type': 'application/json', 'gerege-event-id': id, 'gerege-signature': `t=${t},v1=${v1}` } };
}

async function cannon(url, { references, rate }) {
  let n = 0;
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION,
    ...(rate ? { overallRate: rate } : {}),
    requests: [
      {
        method: 'POST',
        path: '/webhooks/gerege',
        setupRequest: (request) => Object.assign(request, signedGerege(references[(n += 1) % references.length])),
      },
    ],
  });
  return {
    requestsPerSec: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

async function throughput(broker, log) {
  const relay = await startRelay(broker.url);
  const device = await mqtt.connectAsync(broker.url, { clientId: `${PREFIX}-tp-webhooks`, clean: true, protocolVersion: 4 });
  let delivered = 0;
  device.on('message', () => {
    delivered += 1;
  });
  await device.subscribeAsync(`${PREFIX}/tp/webhooks/+`, { qos: 1 });
  await device.publishAsync(
    `${PREFIX}/tp/route`,
    JSON.stringify({ v: 1, deviceId: 'tp', referencePrefixes: ['tp-db-'], providers: ['gerege'] }),
    { qos: 1, retain: true },
  );
  const barePort = await freePort();
  const bare = child([
    '--input-type=module',
    '-e',
    `
    import Fastify from 'fastify';
    const app = Fastify({ logger: false });
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_r, body, done) => done(null, body));
    app.post('/webhooks/gerege', async (_request, reply) => reply.code(200).send({ received: true }));
    app.get('/health', async () => ({ ok: true }));
    await app.listen({ host: '127.0.0.1', port: ${barePort} });`,
  ]);
  const bareUrl = `http://127.0.0.1:${barePort}`;
  await waitFor(async () => (await fetch(`${bareUrl}/health`).catch(() => null))?.ok, { what: 'bare route' });
  await sleep(300); // the relay reads the retained route
  const references = Array.from({ length: 100 }, (_, i) => `tp-db-${i}`);
  const rssIdle = rssMb(relay.proc.pid);
  await cannon(relay.url, { references }); // warm-up
  const cpuBefore = cpuSec(relay.proc.pid);
  const deliveredBefore = delivered;
  const viaRelay = await cannon(relay.url, { references });
  const relayCpuSec = cpuSec(relay.proc.pid) - cpuBefore;
  await waitFor(() => delivered - deliveredBefore >= viaRelay.total - viaRelay.non2xx, {
    what: 'every published webhook delivered',
    timeoutMs: 30_000,
  }).catch(() => {});
  const rssLoaded = rssMb(relay.proc.pid);
  const bareRoute = await cannon(bareUrl, { references });
  const atRate = await cannon(relay.url, { references, rate: 200 });
  log(`throughput: relay ${viaRelay.requestsPerSec}/s, bare ${bareRoute.requestsPerSec}/s`);
  await device.publishAsync(`${PREFIX}/tp/route`, '', { qos: 1, retain: true });
  await device.endAsync();
  await Promise.all([stop(relay.proc), stop(bare)]);
  const perCpuSec = Math.round((viaRelay.total - viaRelay.non2xx) / relayCpuSec);
  return {
    viaRelay,
    bareRoute,
    atRate200: atRate,
    relayCpuSec,
    eventsPerCpuSecond: perCpuSec,
    deliveredToDevice: delivered - deliveredBefore,
    startupMs: relay.startupMs,
    rssIdleMb: rssIdle,
    rssLoadedMb: rssLoaded,
  };
}

async function device({ name, simulator, brokerUrl, source, webhookPort }) {
  const localPort = await freePort();
  const simLogPath = join(dir, `${name}.jsonl`);
  const service = createServiceProcess({
    configPath: join(dir, `${name}.yaml`),
    config: () => ({
      device: { id: name, mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
      provider: { name: 'gerege', baseUrl: simulator.url, clientId: 'sim-client', invoiceTtlSec: 600 },
      // The slowest poll allowed: the webhook path, not the poller, is what is measured.
      poll: { intervalMs: 60_000 },
      // No rate limit and no double-press window: the bench creates orders back to back.
      http: {
        local: { host: '127.0.0.1', port: localPort, ordersPerMinute: 1_000_000, doublePressWindowMs: 0 },
        webhook: { host: '127.0.0.1', port: webhookPort, silenceGraceSec: 3_600 },
      },
      storage: { path: join(dir, `${name}.db`) },
      actuator: { kind: 'sim', sim: { logPath: simLogPath, durationMs: 0 } },
      mqtt: { url: source === 'broker' ? brokerUrl : '', prefix: PREFIX, telemetryIntervalSec: 3_600 },
      fleet: { webhookSource: source },
      // info: the harness waits for the "vendgate ready" line.
      log: { level: 'info' },
    }),
    env: { VENDGATE_PROVIDER_CLIENT_SECRET: 'sim-secret', VENDGATE_WEBHOOK_SECRETS: SECRET },
  });
  await service.start();
  return { service, simLogPath, localUrl: `http://127.0.0.1:${localPort}` };
}

async function latency(broker, log) {
  const relayPort = await freePort();
  const tunnelPort = await freePort();
  // One simulator per path, the same in both but for where its webhooks go.
  const simT = createSimulator({ provider: 'gerege', seed: 1601, webhookUrl: `http://127.0.0.1:${tunnelPort}/webhooks/gerege` });
  const relaySim = createSimulator({ provider: 'gerege', seed: 1602, webhookUrl: `http://127.0.0.1:${relayPort}/webhooks/gerege` });
  await simT.start();
  await relaySim.start();
  const relayConfig = join(dir, 'relay-latency.yaml');
  writeFileSync(
    relayConfig,
    stringify({
      relay: { id: 'latency', host: '127.0.0.1', port: relayPort, providers: ['gerege'] },
      mqtt: { url: broker.url, prefix: PREFIX },
      log: { level: 'warn' },
    }),
  );
  const relay = child([MAIN, 'relay', '--config', relayConfig], { env: { ...process.env, VENDGATE_WEBHOOK_SECRETS: SECRET } });
  await waitFor(async () => (await fetch(`http://127.0.0.1:${relayPort}/webhooks/health`).catch(() => null))?.status === 200, {
    what: 'relay',
  });
  const tunnelDevice = await device({ name: 'lat-tunnel', simulator: simT, source: 'tunnel', webhookPort: tunnelPort });
  const viaBroker = await device({
    name: 'lat-broker',
    simulator: relaySim,
    brokerUrl: broker.url,
    source: 'broker',
    webhookPort: await freePort(),
  });
  // Relay: wait until it knows the broker device's route (retained, announced on connect).
  await sleep(500);
  const results = {};
  for (const [label, d, sim] of [
    ['tunnel', tunnelDevice, simT],
    ['relay+broker', viaBroker, relaySim],
  ]) {
    const lines = followSimLog(d.simLogPath);
    const seen = new Map();
    const measured = [];
    for (let i = 0; i < ORDERS + 3; i += 1) {
      const created = await postJson(`${d.localUrl}/api/orders`, { slot: 'A1' });
      if (created.status !== 201) throw new Error(`${label}: create answered ${created.status}`);
      await sim.pay(created.body.invoiceId);
      await waitFor(
        () => {
          for (const l of lines()) seen.set(l.orderId, Date.parse(l.at));
          return seen.has(created.body.orderId);
        },
        { what: `${label} actuation`, timeoutMs: 30_000 },
      );
      await waitFor(
        async () => (await fetch(`${d.localUrl}/api/orders/${created.body.orderId}`).then((r) => r.json())).state === 'vended',
        { what: 'vended' },
      );
      if (i >= 3) measured.push(created.body);
    }
    const paidAt = new Map(sim.records().invoices.map((inv) => [inv.id, inv.paidAt]));
    results[label] = percentiles(measured.map((o) => seen.get(o.orderId) - paidAt.get(o.invoiceId)));
    log(`paid → actuation ${label}: p50 ${results[label].p50} ms, p99 ${results[label].p99} ms`);
  }
  await Promise.all([tunnelDevice.service.kill('SIGTERM'), viaBroker.service.kill('SIGTERM'), stop(relay)]);
  await Promise.all([simT.stop(), relaySim.stop()]);
  return results;
}

async function subscribers(broker, log) {
  const subs = child([join(ROOT, 'scripts/bench/fleet-subscribers.mjs'), broker.url, PREFIX, String(SUBSCRIBERS)]);
  let last = {};
  let buffer = '';
  subs.stdout.on('data', (c) => {
    buffer += c;
    const lines = buffer.split('\n');
    buffer = lines.pop();
    for (const l of lines) last = { ...last, ...JSON.parse(l) };
  });
  await waitFor(() => last.ready === SUBSCRIBERS, { what: `${SUBSCRIBERS} subscribers`, timeoutMs: 120_000, intervalMs: 50 });
  const relay = await startRelay(broker.url);
  await sleep(500);
  const references = Array.from({ length: SUBSCRIBERS }, (_, i) => `sub-${i}-db-1`);
  const before = last.received ?? 0;
  const t0 = Date.now();
  const run = await cannon(relay.url, { references });
  const published = run.total - run.non2xx;
  await waitFor(() => (last.received ?? 0) - before >= published, { what: 'deliveries', timeoutMs: 60_000, intervalMs: 50 }).catch(
    () => {},
  );
  const seconds = (Date.now() - t0) / 1000;
  const result = {
    subscribers: SUBSCRIBERS,
    subscribersRssMb: last.rssMb,
    published,
    delivered: (last.received ?? 0) - before,
    brokerMessagesPerSec: Math.round(((last.received ?? 0) - before) / seconds),
    relayRequestsPerSec: run.requestsPerSec,
    relayP99Ms: run.p99Ms,
    relayRssWithRoutesMb: rssMb(relay.proc.pid),
    mosquittoRssMb: rssMb(broker.proc.pid),
  };
  log(`${SUBSCRIBERS} subscribers: ${result.brokerMessagesPerSec} messages/s delivered`);
  await stop(relay.proc);
  await stop(subs);
  return result;
}

const log = (line) => process.stderr.write(`relay bench: ${line}\n`);
const broker = await startMosquitto();
try {
  const results = {
    at: new Date().toISOString(),
    machine: machine(),
    settings: { durationSec: DURATION, connections: CONNECTIONS, subscribers: SUBSCRIBERS, orders: ORDERS, quick: QUICK },
  };
  results.throughput = await throughput(broker, log);
  results.latency = await latency(broker, log);
  results.fleet = await subscribers(broker, log);
  const t = results.throughput;
  console.log(`\nvendgate relay — ${results.machine.cpu}, ${results.machine.cpus} cores, ${results.machine.node}`);
  console.log(
    `relay, verified + published + PUBACK: ${t.viaRelay.requestsPerSec} req/s (p50 ${t.viaRelay.p50Ms} ms, p99 ${t.viaRelay.p99Ms} ms), ${t.eventsPerCpuSecond} events per CPU-second (target ≥ 2,000)`,
  );
  console.log(
    `bare fastify route, same run:        ${t.bareRoute.requestsPerSec} req/s (p50 ${t.bareRoute.p50Ms} ms, p99 ${t.bareRoute.p99Ms} ms)`,
  );
  console.log(
    `relay at 200 req/s: p99 ${t.atRate200.p99Ms} ms; start-up ${t.startupMs} ms to healthy; RSS ${t.rssIdleMb} MB idle, ${t.rssLoadedMb} MB after load`,
  );
  for (const [label, p] of Object.entries(results.latency))
    console.log(`paid → actuation via ${label.padEnd(13)} p50 ${p.p50} ms, p99 ${p.p99} ms (n ${p.n})`);
  const f = results.fleet;
  console.log(
    `${f.subscribers} subscribers (one process, ${f.subscribersRssMb} MB): ${f.delivered}/${f.published} delivered, ${f.brokerMessagesPerSec} broker messages/s; relay RSS ${f.relayRssWithRoutesMb} MB with ${f.subscribers} routes; Mosquitto RSS ${f.mosquittoRssMb} MB`,
  );
  const outDir = join(ROOT, 'bench-results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'relay-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log('results: bench-results/relay-latest.json');
} finally {
  await stop(broker.proc);
  rmSync(dir, { recursive: true, force: true });
}
