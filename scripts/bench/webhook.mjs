#!/usr/bin/env node
/**
 * Webhook listener benchmark: autocannon on loopback against the REAL service's webhook listener
 * (`node dist/main.js start`, sandbox provider) with valid signed events — a new event id on every
 * request — side by side with a bare fastify route that answers 204, in the same run.
 *
 *   node scripts/bench/webhook.mjs [--no-build] [--duration SEC] [--connections N] [--rate N]
 *
 * Prints req/s, p50 and p99 for both and the ratio, then a fixed-rate run (default 200 req/s) for
 * the p99 there. Writes JSON to bench-results/. Targets: ≥ 60 % of the bare route's
 * throughput, p99 < 10 ms at 200 req/s.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { stringify } from 'yaml';
import { freePort } from '../soak/service.mjs';
import { BENCH_WEBHOOK_SECRET as SECRET, signedRequest, waitUntilUp } from './lib.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;
const { values: args } = parseArgs({
  options: {
    'no-build': { type: 'boolean' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    rate: { type: 'string', default: '200' },
  },
});
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const RATE = Number(args.rate);

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function cannon(url, options) {
  const result = await autocannon({
    url,
    connections: options.connections,
    duration: options.duration,
    ...(options.rate ? { overallRate: options.rate } : {}),
    requests: [{ method: 'POST', path: '/webhooks/sandbox', setupRequest: signedRequest }],
  });
  return {
    requestsPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

async function main() {
  if (!args['no-build']) {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-'));
  const webhookPort = await freePort();
  const localPort = await freePort();
  const barePort = await freePort();
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
  // The service logs one line per accepted webhook at info, as on a device; the lines go nowhere here.
  const service = spawn(process.execPath, [join(ROOT, 'dist/main.js'), 'start', '--config', config], {
    env: { ...process.env, VENDGATE_WEBHOOK_SECRETS: SECRET },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const bare = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `
    import Fastify from 'fastify';
    const app = Fastify({ logger: false });
    app.post('/webhooks/sandbox', async (_request, reply) => reply.code(204).send());
    app.get('/health', async () => ({ ok: true }));
    await app.listen({ host: '127.0.0.1', port: ${barePort} });
  `,
    ],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );

  try {
    const webhookUrl = `http://127.0.0.1:${webhookPort}`;
    const bareUrl = `http://127.0.0.1:${barePort}`;
    await waitUntilUp(`${webhookUrl}/webhooks/health`, service, 'the service');
    await waitUntilUp(`${bareUrl}/health`, bare, 'the bare fastify server');

    // A short warm-up of each (JIT, SQLite page cache), not counted.
    await cannon(webhookUrl, { connections: CONNECTIONS, duration: 2 });
    await cannon(bareUrl, { connections: CONNECTIONS, duration: 2 });

    const webhook = await cannon(webhookUrl, { connections: CONNECTIONS, duration: DURATION });
    const bareRoute = await cannon(bareUrl, { connections: CONNECTIONS, duration: DURATION });
    const webhookAtRate = await cannon(webhookUrl, { connections: CONNECTIONS, duration: DURATION, rate: RATE });
    const bareAtRate = await cannon(bareUrl, { connections: CONNECTIONS, duration: DURATION, rate: RATE });

    const ratio = webhook.requestsPerSec / bareRoute.requestsPerSec;
    const results = {
      at: new Date().toISOString(),
      machine: {
        node: process.version,
        cpu: cpus()[0]?.model ?? 'unknown',
        cpus: cpus().length,
        platform: `${process.platform}-${process.arch}`,
      },
      settings: { durationSec: DURATION, connections: CONNECTIONS, fixedRate: RATE },
      throughput: { webhook, bareRoute, ratio },
      fixedRate: { webhook: webhookAtRate, bareRoute: bareAtRate },
      targets: { ratioAtLeast: 0.6, p99AtRateBelowMs: 10, ratioMet: ratio >= 0.6, p99Met: webhookAtRate.p99Ms < 10 },
    };

    const row = (name, r) =>
      `${name.padEnd(26)} ${r.requestsPerSec.toFixed(0).padStart(8)} ${String(r.p50Ms).padStart(8)} ${String(r.p99Ms).padStart(8)} ${String(r.non2xx + r.errors + r.timeouts).padStart(8)}`;
    console.log(
      `\nwebhook listener vs bare fastify 204 — loopback, ${CONNECTIONS} connections, ${DURATION} s each (${results.machine.cpu}, ${results.machine.node})`,
    );
    console.log(`${'run'.padEnd(26)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'failed'.padStart(8)}`);
    console.log(row('webhook (verify+store)', webhook));
    console.log(row('bare fastify 204', bareRoute));
    console.log(`throughput ratio: ${(ratio * 100).toFixed(1)} % of the bare route (target ≥ 60 %) ${ratio >= 0.6 ? 'OK' : 'MISSED'}`);
    console.log(row(`webhook @ ${RATE} req/s`, webhookAtRate));
    console.log(row(`bare @ ${RATE} req/s`, bareAtRate));
    console.log(`p99 at ${RATE} req/s: ${webhookAtRate.p99Ms} ms (target < 10 ms) ${webhookAtRate.p99Ms < 10 ? 'OK' : 'MISSED'}`);

    const outDir = join(ROOT, 'bench-results');
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `webhook-${results.at.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(join(outDir, 'webhook-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    console.log(`results: ${file}`);
    if (webhook.non2xx + webhook.errors > 0) process.exitCode = 1;
  } finally {
    await Promise.all([stop(service), stop(bare)]);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
