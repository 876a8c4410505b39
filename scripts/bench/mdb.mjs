#!/usr/bin/env node
/**
 * Payment seen → MDB approval sent, beside the relay path, in one run.
 *
 *   node scripts/bench/mdb.mjs [--orders N] [--quick]   (after npm run build; needs socat)
 *
 * Two real compiled services, each with a Gerege simulator in this process as its provider: one
 * with the sim actuator (the relay path's software: paid → actuation line), one with the MDB profile
 * on a socat pseudo-terminal pair whose far end is a minimal machine in this process (C,1 →
 * ENABLED; it names item 12 at 1500, and answers an approval with VEND SUCCESS). Per order the
 * signed `succeeded` webhook is POSTed; the figure runs from just before that POST to the moment
 * `C,VEND` reaches the machine's end of the pty (MDB) or the sim actuator's line (relay). Orders
 * alternate between the two, so a noisy neighbour hits both alike. Both services log at info: the
 * readiness both wait for is the "vendgate ready" info line. BENCH_DEBUG=1 prints the MDB service's
 * log; a timeout quotes its last warnings.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SerialPort } from 'serialport';
import { createSimulator, signGeregeWebhook } from '../../dist/simulator/index.js';
import { createServiceProcess, freePort } from '../soak/service.mjs';
import { oneOrder, startStack } from './actuation.mjs';
import { getJson, payAndSucceededEvent, percentiles, row, sleep, waitFor } from './lib.mjs';
import { unitStart } from './resources.mjs';

const WEBHOOK_SECRET = 'whsec_simulator';

async function ptyPair(dir) {
  const gateway = join(dir, 'gateway');
  const machine = join(dir, 'machine');
  const socat = spawn('socat', [`pty,raw,echo=0,link=${gateway}`, `pty,raw,echo=0,link=${machine}`], { stdio: 'ignore' });
  await waitFor(() => existsSync(gateway) && existsSync(machine), { what: 'socat pty pair' });
  return { gateway, machine, socat };
}

/** The machine end: enables on C,1, notes when each C,VEND arrives, answers it with a vend. */
async function startMachine(path) {
  const port = new SerialPort({ path, baudRate: 115_200 });
  await new Promise((resolve, reject) => port.once('open', resolve).once('error', reject));
  const state = { enabled: false, approvedAt: null };
  let buffer = '';
  port.on('data', (chunk) => {
    buffer += chunk.toString('latin1');
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line === 'C,1') {
        state.enabled = true;
        port.write('c,STATUS,ENABLED\r\n');
      } else if (line.startsWith('C,VEND,')) {
        state.approvedAt = Date.now();
        port.write('c,VEND,SUCCESS\r\nc,STATUS,IDLE\r\nc,STATUS,ENABLED\r\n');
      }
    }
  });
  return { state, select: () => port.write('c,STATUS,VEND,1500,12\r\n'), close: () => new Promise((r) => port.close(() => r())) };
}

async function startMdbStack({ main, nodeArgs, env }) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-mdb-'));
  const pty = await ptyPair(dir);
  const machine = await startMachine(pty.machine);
  const [localPort, webhookPort] = [await freePort(), await freePort()];
  const sim = createSimulator({ provider: 'gerege', seed: 33 });
  await sim.start();
  // The service's last warnings, to read a failure without a rerun.
  const warnings = [];
  const service = createServiceProcess({
    onLine: (line) => {
      if (process.env.BENCH_DEBUG) process.stderr.write(line + '\n');
      if (!/"level":(40|50|60)/.test(line)) return;
      warnings.push(line);
      if (warnings.length > 20) warnings.shift();
    },
    main,
    nodeArgs,
    readyTimeoutMs: 60_000,
    configPath: join(dir, 'config.yaml'),
    config: () => ({
      device: { id: 'bench-mdb', mode: 'vending', currency: 'MNT', catalog: [{ slot: '12', name: 'Chips', price: 1500 }] },
      provider: { name: 'gerege', baseUrl: sim.url, clientId: 'sim-client', invoiceTtlSec: 120 },
      poll: { intervalMs: 60_000 },
      http: { local: { host: '127.0.0.1', port: localPort }, webhook: { host: '127.0.0.1', port: webhookPort } },
      storage: { path: join(dir, 'vendgate.db') },
      actuator: { kind: 'serial', serial: { path: pty.gateway, baudRate: 115_200, profile: 'mdb', timeoutMs: 5_000 } },
      mqtt: { url: '' },
      // info: readiness is the "vendgate ready" line (an info line) on stdout.
      log: { level: 'info' },
    }),
    env: { ...env, VENDGATE_PROVIDER_CLIENT_SECRET: 'sim-secret', VENDGATE_WEBHOOK_SECRETS: WEBHOOK_SECRET },
  });
  await service.start();
  await waitFor(() => machine.state.enabled, { what: 'the reader enabled' });
  const localUrl = `http://127.0.0.1:${localPort}`;
  return {
    label: 'MDB',
    samples: [],
    async one() {
      machine.state.approvedAt = null;
      const before = (await getJson(`${localUrl}/api/state`)).body.order?.orderId ?? 0;
      machine.select();
      const order = await waitFor(
        async () => {
          const o = (await getJson(`${localUrl}/api/state`)).body.order;
          return o && o.orderId !== before && o.state === 'awaiting_payment' && o;
        },
        { what: 'the MDB order' },
      ).catch((err) => {
        throw new Error(`${err.message}; the service's last warnings:\n${warnings.join('\n')}`);
      });
      const event = await payAndSucceededEvent(sim, order.invoiceId);
      const body = JSON.stringify(event);
      const sentAt = Date.now();
      const response = await fetch(`http://127.0.0.1:${webhookPort}/webhooks/gerege`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'gerege-event-id': event.id,
          'gerege-signature': signGeregeWebhook(WEBHOOK_SECRET, body, Math.floor(sentAt / 1000)),
        },
        body,
      });
      await response.arrayBuffer();
      await waitFor(() => machine.state.approvedAt !== null, { intervalMs: 1, what: 'C,VEND at the machine' });
      const ms = machine.state.approvedAt - sentAt;
      await waitFor(async () => (await getJson(`${localUrl}/api/orders/${order.orderId}`)).body.state === 'vended', { what: 'vended' });
      return ms;
    },
    async stop() {
      await service.kill('SIGTERM');
      await machine.close();
      pty.socat.kill('SIGKILL');
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function mdbBench({ log, quick, orders: ordersOption }) {
  const orders = ordersOption ?? (quick ? 10 : 150);
  const unit = unitStart();
  const relay = await startStack({
    label: 'relay path',
    main: unit.main,
    nodeArgs: unit.nodeArgs,
    env: unit.env,
    // startStack's readiness is the "vendgate ready" info line: at warn it never comes.
    level: 'info',
    readyTimeoutMs: 60_000,
    // The MDB stack's simulator answers from this process: the relay path's does too, so the two compare.
    simInProcess: true,
  });
  log('mdb: relay-path service up');
  const mdb = await startMdbStack(unit);
  log('mdb: MDB service up');
  const relaySamples = [];
  try {
    for (let i = 0; i < 3; i += 1) {
      await oneOrder(relay);
      await mdb.one();
    }
    for (let i = 0; i < orders; i += 1) {
      await sleep(Math.floor(Math.random() * 200));
      relaySamples.push(await oneOrder(relay));
      mdb.samples.push(await mdb.one());
    }
    log(`mdb: ${orders} orders each path`);
  } finally {
    await relay.stop();
    await mdb.stop();
  }
  const fmt = (p) => `${p.p50} / ${p.p99} ms`;
  const [m, r] = [percentiles(mdb.samples), percentiles(relaySamples)];
  return {
    name: 'mdb',
    settings: { orders },
    results: { mdb: m, relay: r },
    rows: [
      row('payment seen (webhook POST) → C,VEND at the machine: p50 / p99', fmt(m)),
      row('  same run, relay path (webhook POST → sim actuator line): p50 / p99', fmt(r)),
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { orders: { type: 'string' }, quick: { type: 'boolean', default: false } } });
  const result = await mdbBench({
    log: (line) => process.stderr.write(`${line}\n`),
    quick: values.quick,
    ...(values.orders ? { orders: Number(values.orders) } : {}),
  });
  for (const r of result.rows) process.stdout.write(`${r.figure}: ${r.value}\n`);
  process.stdout.write(`${JSON.stringify(result.results)}\n`);
}
