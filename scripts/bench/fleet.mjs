#!/usr/bin/env node
/**
 * `npm run bench:fleet`: the relay at fleet size, each figure beside the relay of
 * cecb1e4 (built from `git archive` by baseline.mjs) measured in the same run. Per N and per build:
 *
 *   - 2 Mosquitto brokers from the SHIPPED confs and ACL (config/fleet/mosquitto/): devices on A,
 *     relays on B, the shipped bridge between them. Rewritten for loopback: paths, ports, and plain
 *     TCP instead of TLS (30,000 TLS sessions in a few Node processes would measure OpenSSL, not the relay);
 *   - N light devices (fleet-devices.mjs, 2,500 per process): own login, persistent webhook session,
 *     retained route, PUBACK per webhook; reconnect backoff of that build;
 *   - a cold relay replica learning all N routes: time until it routes every sampled device, the
 *     2xx it answered for a device it had not learned yet, the longest health-probe answer (event-loop
 *     stall), RSS once learned;
 *   - 3 replicas behind a round-robin HTTP balancer (health-checked): sustained webhooks/s, then a
 *     burst; p50/p99 from the provider's send to the device's PUBACK, misrouted, acknowledged-and-lost;
 *   - the device broker restarted: the distribution of reconnect times, time until 99 % are back in
 *     their session; the relay broker restarted: time until 200s come back; 2xx lost meanwhile.
 *
 *   npm run bench:fleet [-- --devices 1000,10000] [-- --sustain SEC] [-- --builds current,baseline]
 *   node scripts/bench/fleet.mjs --devices 10000 --builds current,cecb1e4,e62fe96   (this build beside both baselines)
 *
 * Figures, not a test. JSON goes to bench-results/fleet-*.json.
 */
import { spawn, spawnSync, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, readFileSync, copyFileSync } from 'node:fs';
import { createServer, connect as netConnect } from 'node:net';
import { request as httpRequest, Agent } from 'node:http';
import { loadavg, tmpdir, hostname } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import mqtt from 'mqtt';
import { signGeregeTestPayload } from '../../dist/payments/adapters.js';
import { baselineBuild } from './baseline.mjs';
import { machine, percentiles, rssMb, sleep, waitFor } from './lib.mjs';
import { cpuSeconds } from './resources.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;
const CONF = join(ROOT, 'config/fleet/mosquitto');
const MOSQUITTO = '/usr/sbin/mosquitto';
const BASELINE = 'cecb1e4';
const { values: args } = parseArgs({
  options: {
    devices: { type: 'string', default: '1000' },
    sustain: { type: 'string', default: '30' },
    rate: { type: 'string', default: '200' },
    burst: { type: 'string', default: '1000' },
    'burst-sec': { type: 'string', default: '5' },
    builds: { type: 'string', default: 'current,baseline' },
    'per-process': { type: 'string', default: '2500' },
    'learn-timeout': { type: 'string', default: '90' },
    'skip-restarts': { type: 'boolean' },
    // The cold replica and the 3 replicas under --cpu-prof (bench-results/fleet-prof-<build>-<N>/[cold/], written when they stop).
    profile: { type: 'boolean' },
    // Stop after counting the retained routes on each broker (checking a broker configuration).
    'routes-only': { type: 'boolean' },
  },
});
const SECRET = 'whsec_fleet_bench';
const ON_A = 17_500;
const DB = 'ab12cd';
const say = (...m) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...m);
const children = new Set();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
process.once('SIGINT', () => process.exit(130));
process.once('SIGTERM', () => process.exit(143));

function track(proc) {
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  return proc;
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function portAnswers(port) {
  return new Promise((resolve) => {
    const s = netConnect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** A broker from a shipped conf: paths, port, plain TCP on loopback, the bridge to `bridgeTo`. */
function broker(template, dir, port, bridgeTo) {
  mkdirSync(join(dir, 'data'), { recursive: true });
  copyFileSync(join(CONF, 'fleet.acl'), join(dir, 'fleet.acl'));
  let text = readFileSync(join(CONF, template), 'utf8')
    .replaceAll('/etc/mosquitto/', `${dir}/`)
    .replaceAll('/var/lib/mosquitto/', `${dir}/data/`)
    .replace(/^listener 8883$/m, `listener ${port} 127.0.0.1`)
    .replace(/^(cafile|certfile|keyfile|require_certificate|bridge_cafile) .*$/gm, '#$&');
  if (process.getuid?.() === 0) text = `user root\n${text}`;
  if (bridgeTo)
    text = text
      .replace(/^address .*$/m, `address 127.0.0.1:${bridgeTo}`)
      .replace(/^remote_password .*$/m, 'remote_password pw-bridge')
      .replace(/^restart_timeout .*$/m, 'restart_timeout 1 2');
  const conf = join(dir, template);
  writeFileSync(conf, text);
  let proc = null;
  return {
    port,
    get pid() {
      return proc?.pid;
    },
    async start() {
      proc = track(spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'ignore', 'ignore'] }));
      await waitFor(() => portAnswers(port), { timeoutMs: 30_000, intervalMs: 50, what: `mosquitto ${template}` });
    },
    async stop() {
      if (!proc || proc.exitCode !== null) return;
      const p = proc;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * How many retained routes a broker holds (what a cold replica can learn there): a relay-account
 * client subscribes to every route and to a marker topic in one SUBSCRIBE, publishes the marker and
 * counts the routes that arrive before it (the relay's own backlog trick). A broker whose queue per
 * client is smaller than its routes drops the overflow and the marker with it: then the count is
 * what arrived within 30 s, and `markerBack` is false.
 */
function retainedRoutes(port) {
  return new Promise((resolve, reject) => {
    const marker = `vendgate/_relay/count-${process.pid}-${randomBytes(4).toString('hex')}/sync`;
    const nonce = randomBytes(8).toString('hex');
    const seen = new Set();
    const c = mqtt.connect(`mqtt://127.0.0.1:${port}`, {
      username: 'relay',
      password: 'pw-relay',
      clientId: `vendgate_relay_count_${randomBytes(4).toString('hex')}`,
      clean: true,
      reconnectPeriod: 0,
    });
    const timer = setTimeout(() => {
      c.end(true);
      resolve({ routes: seen.size, markerBack: false });
    }, 30_000);
    c.on('error', (err) => {
      clearTimeout(timer);
      c.end(true);
      reject(err);
    });
    c.on('message', (topic, payload) => {
      if (topic !== marker) {
        if (payload.length > 0) seen.add(topic);
        return;
      }
      if (payload.toString() !== nonce) return;
      clearTimeout(timer);
      c.end(true);
      resolve({ routes: seen.size, markerBack: true });
    });
    c.on('connect', () =>
      c.subscribe({ 'vendgate/+/route': { qos: 1 }, [marker]: { qos: 1 } }, () => c.publish(marker, nonce, { qos: 1 })),
    );
  });
}

function passwords(dir, n) {
  const lines = ['relay:pw-relay', 'bridge:pw-bridge', 'operator:pw-operator'];
  for (let i = 0; i < n; i += 1) lines.push(`bd-${i}:pw-bd-${i}`);
  writeFileSync(join(dir, 'fleet.passwd'), `${lines.join('\n')}\n`);
  const r = spawnSync('mosquitto_passwd', ['-U', join(dir, 'fleet.passwd')]);
  if (r.status !== 0) throw new Error(`mosquitto_passwd -U failed: ${r.stderr}`);
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
function http(port, method, path, body, headers = {}) {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent, timeout: 30_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.on('timeout', () => req.destroy());
    req.end(body);
  });
}

/** The balancer: round-robin over the replicas whose health said 200 at the last check (every 250 ms). */
async function balancer(backends) {
  const healthy = new Set();
  const check = setInterval(async () => {
    for (const b of backends()) {
      const r = await http(b, 'GET', '/webhooks/health');
      if (r.status === 200) healthy.add(b);
      else healthy.delete(b);
    }
  }, 250);
  let next = 0;
  const port = await freePort();
  const server = createServer((client) => {
    const list = [...healthy];
    if (list.length === 0) {
      client.end('HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      return;
    }
    const target = list[next++ % list.length];
    const upstream = netConnect(target, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return {
    port,
    healthy: () => healthy.size,
    close() {
      clearInterval(check);
      server.close();
    },
  };
}

function relay(main, dir, name, brokerPort, nodeArgs = []) {
  return (async () => {
    const port = await freePort();
    const conf = join(dir, `${name}.yaml`);
    writeFileSync(
      conf,
      stringify({
        relay: { id: name, host: '127.0.0.1', port, providers: ['gerege'], publishTimeoutMs: 5_000, statsIntervalSec: 3600 },
        mqtt: { url: `mqtt://127.0.0.1:${brokerPort}`, prefix: 'vendgate', username: 'relay', keepaliveSec: 30, reconnectMinMs: 500 },
        log: { level: 'warn' },
      }),
    );
    const proc = track(
      spawn(process.execPath, [...nodeArgs, main, 'relay', '--config', conf], {
        env: { ...process.env, VENDGATE_WEBHOOK_SECRETS: SECRET, VENDGATE_MQTT_PASSWORD: 'pw-relay' },
        stdio: ['ignore', 'ignore', 'inherit'],
      }),
    );
    return {
      port,
      proc,
      kill: async () => {
        if (proc.exitCode !== null) return;
        const e = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await e;
      },
    };
  })();
}

/** `k` distinct indices in [0, n), in random order (all of them when n ≤ k). */
function distinctSample(n, k) {
  const all = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < Math.min(k, n); i += 1) {
    const j = i + Math.floor(Math.random() * (n - i));
    [all[i], all[j]] = [all[j], all[i]];
  }
  return all.slice(0, Math.min(k, n));
}

let eventSeq = 0;
function event(deviceIndex) {
  const id = `evt_${process.pid}_${(eventSeq += 1)}`;
  const device = `bd-${deviceIndex}`;
  const reference = `${device}-${DB}-${eventSeq}-${randomBytes(4).toString('hex')}`;
  const now = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    id,
    object: 'event',
    type: 'payment_intent.succeeded',
    livemode: false,
    created: now,
    data: { object: { id: `pi_${eventSeq}`, object: 'payment_intent', status: 'succeeded', reference } },
  });
  return {
    id,
    device,
    body,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'gerege-event-id': id,
      'gerege-signature': signGeregeTestPayload(body, SECRET, now),
    },
  };
}

/** The provider: sends, records every answer, retries a non-2xx after 1 s (up to 60 times). */
function createProvider(devicesN) {
  const sent = new Map(); // id → { device, t0, statuses: [], final }
  async function deliver(port, e) {
    const record = { device: e.device, t0: Date.now(), statuses: [], final: null, answerMs: null };
    sent.set(e.id, record);
    for (let attempt = 0; attempt < 60; attempt += 1) {
      const r = await http(port, 'POST', '/webhooks/gerege', e.body, e.headers);
      record.statuses.push(r.status);
      if (r.status >= 200 && r.status < 300) {
        record.final = r.status;
        // The relay's answer: verify, locate, publish and the relay broker's PUBACK (no bridge, no device).
        if (attempt === 0) record.answerMs = r.ms;
        return;
      }
      await sleep(1_000);
    }
  }
  async function at(port, rate, seconds) {
    const inflight = [];
    const start = performance.now();
    const total = Math.round(rate * seconds);
    for (let i = 0; i < total; i += 1) {
      const due = start + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      inflight.push(deliver(port, event(Math.floor(Math.random() * devicesN))));
    }
    return Promise.all(inflight);
  }
  return { sent, deliver, at };
}

async function one(n, build, main) {
  const dir = mkdtempSync(join(tmpdir(), `vendgate-fleet-bench-${build}-`));
  const result = { devices: n, build };
  const cleanup = [];
  try {
    for (const b of ['a', 'b']) {
      mkdirSync(join(dir, b), { recursive: true });
      passwords(join(dir, b), n);
    }
    const [portA, portB] = [await freePort(), await freePort()];
    const brokerB = broker('relay-broker.conf', join(dir, 'b'), portB);
    const brokerA = broker('device-broker.conf', join(dir, 'a'), portA, portB);
    await brokerB.start();
    await brokerA.start();
    cleanup.push(
      () => brokerA.stop(),
      () => brokerB.stop(),
    );

    // The devices.
    const got = new Map(); // eventId → [device, topicDevice, at]
    const reconnects = [];
    const connectedBy = new Map();
    const perProcess = Number(args['per-process']);
    const deviceProcs = [];
    const t0 = Date.now();
    // A process may hold 20,000 descriptors here: up to ON_A devices on the device broker, the
    // rest on the relay broker (whose webhooks then need no bridge).
    result.devicesOnDeviceBroker = Math.min(n, ON_A);
    for (let from = 0; from < n; from += perProcess) {
      const port = from < ON_A ? portA : portB;
      const child = track(
        fork(
          join(ROOT, 'scripts/bench/fleet-devices.mjs'),
          [
            '--port',
            String(port),
            '--from',
            String(from),
            '--to',
            String(Math.min(n, from + perProcess, from < ON_A ? ON_A : n)),
            '--db',
            DB,
            '--backoff',
            // cecb1e4's devices reconnect with its own backoff; later builds with today's.
            build === 'baseline' || build.startsWith('cecb1e4') ? 'baseline' : 'current',
          ],
          { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
        ),
      );
      deviceProcs.push(child);
      child.on('message', (m) => {
        if (m.connected !== undefined) connectedBy.set(child.pid, m.connected);
        for (const [id, device, topicDevice, at] of m.got ?? []) if (!got.has(id)) got.set(id, [device, topicDevice, at]);
        for (const r of m.reconnects ?? []) reconnects.push(r[1]);
      });
      cleanup.push(() => child.kill('SIGTERM'));
    }
    const connected = () => [...connectedBy.values()].reduce((s, v) => s + v, 0);
    await waitFor(() => connected() >= n, { timeoutMs: 600_000, intervalMs: 50, what: `${n} devices connected` });
    result.devicesUpSec = (Date.now() - t0) / 1000;
    say(`${build} N=${n}: ${n} devices connected in ${result.devicesUpSec} s`);
    // Every route retained on the relay broker (over the bridge): wait until it holds them all (or stops gaining).
    let onB = 0;
    for (let last = -1, still = 0; onB < n && still < 5;) {
      await sleep(1_000);
      ({ routes: onB } = await retainedRoutes(portB));
      still = onB === last ? still + 1 : 0;
      last = onB;
    }
    // Devices past ON_A announce on the relay broker directly.
    const onA = await retainedRoutes(portA);
    result.retainedRoutes = {
      relayBroker: onB,
      deviceBroker: onA.routes,
      deviceBrokerAllRead: onA.markerBack,
      afterSec: (Date.now() - t0) / 1000,
    };
    say(`${build} N=${n}: retained routes`, JSON.stringify(result.retainedRoutes));
    if (args['routes-only']) return result;

    // A cold replica learns every route.
    // 20 DISTINCT devices (or all of them when fewer): drawn with replacement, a small fleet's sample
    // held a device twice, the set of routed devices never reached the sample's length and the
    // cold learn "timed out" after every device was routed (it sent nothing more: all were learned).
    const sample = distinctSample(n, 20);
    const coldProf = join(ROOT, 'bench-results', `fleet-prof-${build}-${n}`, 'cold');
    if (args.profile) mkdirSync(coldProf, { recursive: true });
    const cold = await relay(main, dir, `cold-${build}`, portB, args.profile ? ['--cpu-prof', '--cpu-prof-dir', coldProf] : []);
    const coldStart = Date.now();
    const learnedSample = new Set();
    let answers202 = 0;
    let answers503 = 0;
    // Any other answer (0: no connection) by status: what a replica that never learns says instead.
    const answersOther = {};
    let healthAt = null;
    let maxHealthMs = 0;
    let learnedAt = null;
    let listeningAt = null;
    const deadline = coldStart + Number(args['learn-timeout']) * 1000;
    const healthLoop = (async () => {
      while (learnedAt === null && Date.now() < deadline) {
        const h = await http(cold.port, 'GET', '/webhooks/health');
        if (h.status !== 0) maxHealthMs = Math.max(maxHealthMs, h.ms);
        if (h.status !== 0 && listeningAt === null) listeningAt = Date.now();
        if (h.status === 200 && healthAt === null) healthAt = Date.now();
        await sleep(20);
      }
    })();
    while (learnedAt === null && Date.now() < deadline) {
      await Promise.all(
        sample.map(async (idx) => {
          if (learnedSample.has(idx)) return;
          const e = event(idx);
          const r = await http(cold.port, 'POST', '/webhooks/gerege', e.body, e.headers);
          if (r.status === 200) learnedSample.add(idx);
          else if (r.status === 202) answers202 += 1;
          else if (r.status === 503) answers503 += 1;
          else answersOther[r.status] = (answersOther[r.status] ?? 0) + 1;
        }),
      );
      if (learnedSample.size === sample.length) learnedAt = Date.now();
      else await sleep(100);
    }
    await healthLoop;
    result.coldLearn = {
      allSampledRoutedSec: learnedAt === null ? null : (learnedAt - coldStart) / 1000,
      healthOkSec: healthAt === null ? null : (healthAt - coldStart) / 1000,
      // From the first HTTP answer (the process is up) to routing every sampled device: the learning itself.
      learnSinceListeningSec: learnedAt === null || listeningAt === null ? null : (learnedAt - listeningAt) / 1000,
      answered202ForUnlearned: answers202,
      answered503: answers503,
      answeredOther: answersOther,
      longestHealthAnswerMs: Math.round(maxHealthMs),
      rssMbLearned: cold.proc.exitCode === null ? rssMb(cold.proc.pid) : null,
      timedOut: learnedAt === null,
      // The sampled devices it never routed (empty when it learned them all).
      unrouted: sample.filter((idx) => !learnedSample.has(idx)).map((idx) => `bd-${idx}`),
    };
    say(`${build} N=${n}: cold learn`, JSON.stringify(result.coldLearn));
    await cold.kill();
    if (learnedAt === null) {
      result.notRun = `the cold replica did not route every sampled device within ${args['learn-timeout']} s: no load phases`;
      say(`${build} N=${n}: ${result.notRun}`);
      return result;
    }

    // 3 replicas behind the balancer.
    const replicas = [];
    const profDir = join(ROOT, 'bench-results', `fleet-prof-${build}-${n}`);
    if (args.profile) mkdirSync(profDir, { recursive: true });
    const nodeArgs = args.profile ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [];
    for (let i = 0; i < 3; i += 1) replicas.push(await relay(main, dir, `r${i}-${build}`, portB, nodeArgs));
    if (args.profile) result.profiles = profDir;
    cleanup.push(() => Promise.all(replicas.map((r) => r.kill())));
    const lb = await balancer(() => replicas.map((r) => r.port));
    cleanup.push(() => lb.close());
    await waitFor(() => lb.healthy() === 3, { timeoutMs: 600_000, intervalMs: 50, what: 'three healthy replicas' });
    // Every replica routes the sample before the timed phases (the baseline has no "learned" signal).
    for (const r of replicas)
      await waitFor(
        async () => {
          const statuses = await Promise.all(
            sample
              .slice(0, 5)
              .map((idx) => event(idx))
              .map((e) => http(r.port, 'POST', '/webhooks/gerege', e.body, e.headers)),
          );
          return statuses.every((s) => s.status === 200);
        },
        { timeoutMs: Number(args['learn-timeout']) * 1000 * 3, intervalMs: 50, what: 'each replica routing' },
      ).catch(() => say('a replica never routed the sample'));
    result.rssMbReplicas = replicas.map((r) => (r.proc.exitCode === null ? rssMb(r.proc.pid) : null));

    const measure = (provider) => {
      const lat = [];
      const answered = [];
      let misrouted = 0;
      let lost = 0;
      let non2xx = 0;
      let got202 = 0;
      for (const [id, rec] of provider.sent) {
        non2xx += rec.statuses.filter((s) => s < 200 || s >= 300).length;
        if (rec.final === 202) got202 += 1;
        const g = got.get(id);
        if (g && (g[0] !== rec.device || g[1] !== rec.device)) misrouted += 1;
        if (rec.final === 200 && !g) lost += 1;
        if (g) lat.push(g[2] - rec.t0);
        if (rec.answerMs !== null) answered.push(rec.answerMs);
      }
      return {
        sent: provider.sent.size,
        latencyMs: percentiles(lat),
        // Send → the relay's 200 (first attempts): the relay's share of latencyMs.
        relayAnswerMs: percentiles(answered),
        misrouted,
        acknowledgedAndLost: lost,
        answered202: got202,
        retriedAnswers: non2xx,
      };
    };
    const drain = async (provider) =>
      waitFor(() => [...provider.sent].every(([id, r]) => r.final !== 200 || got.has(id)), {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: 'every 200 delivered',
      }).catch(() => {});

    // 5 s at the rate first, not counted: JIT, sockets and the bridge warm up.
    await createProvider(n).at(lb.port, Number(args.rate), 5);
    const sustained = createProvider(n);
    const rate = Number(args.rate);
    const seconds = Number(args.sustain);
    say(`${build} N=${n}: sustained ${rate}/s for ${seconds} s`);
    const relayCpu = () => replicas.reduce((sum, r) => sum + (r.proc.exitCode === null ? cpuSeconds(r.proc.pid) : 0), 0);
    const cpuBefore = relayCpu();
    await sustained.at(lb.port, rate, seconds);
    await drain(sustained);
    // CPU of the three replicas (user + system) per webhook answered: the per-message cost for sizing.
    const relayCpuMsPerWebhook = Math.round(((relayCpu() - cpuBefore) * 1000 * 1000) / sustained.sent.size) / 1000;
    result.sustained = { rate, seconds, ...measure(sustained), relayCpuMsPerWebhook };
    const burst = createProvider(n);
    say(`${build} N=${n}: burst ${args.burst}/s for ${args['burst-sec']} s`);
    // Who spends the CPU during the burst (seconds, user + system), and how late this process's own
    // timers ran (it signs, sends and balances every webhook and hears every device's report).
    const cpuOf = () => ({
      relays: relayCpu(),
      relayBroker: brokerB.pid ? cpuSeconds(brokerB.pid) : 0,
      deviceBroker: brokerA.pid ? cpuSeconds(brokerA.pid) : 0,
      devices: deviceProcs.reduce((sum, c) => sum + (c.exitCode === null ? cpuSeconds(c.pid) : 0), 0),
      bench: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
    });
    const cpuAtBurst = cpuOf();
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    await burst.at(lb.port, Number(args.burst), Number(args['burst-sec']));
    await drain(burst);
    loopDelay.disable();
    const cpuAfterBurst = cpuOf();
    result.burst = {
      rate: Number(args.burst),
      seconds: Number(args['burst-sec']),
      ...measure(burst),
      cpuSec: Object.fromEntries(Object.keys(cpuAtBurst).map((k) => [k, Math.round((cpuAfterBurst[k] - cpuAtBurst[k]) * 100) / 100])),
      benchLoopDelayMs: { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
    };
    say(`${build} N=${n}:`, JSON.stringify({ sustained: result.sustained, burst: result.burst }));

    if (!args['skip-restarts']) {
      // The device broker restarts while webhooks keep coming.
      const during = createProvider(n);
      const sending = during.at(lb.port, rate, 60);
      await sleep(5_000);
      reconnects.length = 0;
      const restartAt = Date.now();
      await brokerA.stop();
      // The devices report every 200 ms: wait until they said they lost the broker, or "99 % back"
      // would read the count from before the restart (as it did for a build that reconnects fast).
      const onA = result.devicesOnDeviceBroker;
      await waitFor(() => connected() <= n - 0.99 * onA, {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: 'the devices to see the broker go',
      }).catch(() => {});
      await brokerA.start();
      let back99 = null;
      await waitFor(() => connected() >= n - 0.01 * onA && (back99 = Date.now()), {
        timeoutMs: 300_000,
        intervalMs: 50,
        what: '99 % back',
      }).catch(() => {});
      await waitFor(() => connected() >= n, { timeoutMs: 120_000, intervalMs: 50, what: 'all back' }).catch(() => {});
      // Their reconnect delays arrive in the same 200 ms reports.
      await waitFor(() => reconnects.length >= onA, { timeoutMs: 10_000, intervalMs: 50, what: 'every reconnect delay reported' }).catch(
        () => {},
      );
      const dist = percentiles(reconnects);
      const deciles = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1].map((q) => {
        const s = [...reconnects].sort((x, y) => x - y);
        return s.length ? s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] : null;
      });
      // The relay broker restarts.
      await sleep(5_000);
      const bAt = Date.now();
      await brokerB.stop();
      await brokerB.start();
      const okAgain = await waitFor(
        async () => {
          const e = event(sample[0]);
          const r = await http(lb.port, 'POST', '/webhooks/gerege', e.body, e.headers);
          return r.status === 200 ? Date.now() : null;
        },
        { timeoutMs: 300_000, intervalMs: 50, what: '200s back after the relay broker restart' },
      ).catch(() => null);
      await sending;
      await drain(during);
      result.restarts = {
        deviceBroker: {
          reconnectMs: dist,
          reconnectDecilesMs: deciles,
          reconnected: reconnects.length,
          back99PercentSec: back99 === null ? null : (back99 - restartAt) / 1000,
        },
        relayBroker: { twoHundredsBackSec: okAgain === null ? null : (okAgain - bAt) / 1000 },
        webhooksMeanwhile: measure(during),
      };
      say(`${build} N=${n}: restarts`, JSON.stringify(result.restarts));
    }
  } finally {
    for (const fn of cleanup.reverse()) await fn();
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

const builds = args.builds.split(',');
// `current` is this checkout; `baseline` is cecb1e4; any other name is a commit built the same way
// (`--builds current,cecb1e4,e62fe96`: this build beside both baselines in one run).
const mains = Object.fromEntries(
  builds.map((build) => [
    build,
    build === 'current' ? join(ROOT, 'dist/main.js') : baselineBuild(build === 'baseline' ? BASELINE : build, say).main,
  ]),
);
const started = new Date();
const load = [loadavg()];
const results = [];
for (const n of args.devices.split(',').map(Number))
  for (const build of builds) {
    results.push(await one(n, build, mains[build]));
    load.push(loadavg());
  }
const out = { date: started.toISOString(), host: hostname(), machine: machine(), loadavg: load, baseline: BASELINE, args, results };
mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
const file = join(ROOT, 'bench-results', `fleet-${started.toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify(out, null, 2));
console.log(JSON.stringify(out, null, 2));
say(`written ${file}`);
// One line per build and N: the burst p50/p99 (the fleet burst figure), or why there is none.
for (const r of results) {
  const b = r.burst;
  say(
    `summary ${r.build} N=${r.devices}: ` +
      (b
        ? `burst ${b.rate}/s × ${b.seconds} s p50 ${b.latencyMs.p50} ms p99 ${b.latencyMs.p99} ms (n ${b.latencyMs.n}/${b.sent}, misrouted ${b.misrouted}, lost ${b.acknowledgedAndLost}; relay's 200 p99 ${b.relayAnswerMs.p99} ms); sustained p99 ${r.sustained.latencyMs.p99} ms`
        : `no burst: ${r.notRun ?? 'routes only'}`),
  );
}
process.exit(0);
