import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '../soak/service.mjs';
import { BENCH_WEBHOOK_SECRET as SECRET, row, signedRequest, sleep } from './lib.mjs';

/**
 * Webhook ingest: the webhook engineer's scripts/bench/webhook.mjs (the service's listener vs a bare
 * fastify 204, same run) when it exists, and beside it the naive handler (naive-webhook-server.mjs)
 * against a bare 204 route measured in the same run, with the same signed requests.
 */
const ROOT = new URL('../../', import.meta.url).pathname;

async function cannon(url, path, { connections, duration, rate }) {
  const result = await autocannon({
    url,
    connections,
    duration,
    ...(rate ? { overallRate: rate } : {}),
    requests: [{ method: 'POST', path, setupRequest: signedRequest }],
  });
  return {
    requestsPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

async function naiveVsBare({ duration, connections, rate }) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-'));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [join(ROOT, 'scripts/bench/naive-webhook-server.mjs'), String(port), join(dir, 'naive.db'), SECRET],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i += 1) {
      try {
        await fetch(`${url}/health`).then((r) => r.arrayBuffer());
        break;
      } catch {
        if (i > 200) throw new Error('naive server did not start');
        await sleep(50);
      }
    }
    await cannon(url, '/webhooks/sandbox', { connections, duration: 2 });
    await cannon(url, '/bare', { connections, duration: 2 });
    const naive = await cannon(url, '/webhooks/sandbox', { connections, duration });
    const bare = await cannon(url, '/bare', { connections, duration });
    const naiveAtRate = await cannon(url, '/webhooks/sandbox', { connections, duration, rate });
    return { naive, bare, naiveAtRate, ratio: naive.requestsPerSec / bare.requestsPerSec };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

function runWebhookBench(duration) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts/bench/webhook.mjs'), '--no-build', '--duration', String(duration)], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('exit', (code) => resolve(code));
  });
}

export async function ingestBench({ log, quick }) {
  const duration = quick ? 3 : 10;
  const connections = 10;
  const rate = 200;
  const rows = [];
  let webhook = null;
  const script = join(ROOT, 'scripts/bench/webhook.mjs');
  if (existsSync(script)) {
    const before = Date.now();
    await runWebhookBench(duration);
    const latest = join(ROOT, 'bench-results/webhook-latest.json');
    if (existsSync(latest)) {
      webhook = JSON.parse(readFileSync(latest, 'utf8'));
      if (Date.parse(webhook.at) < before) webhook = null;
    }
  }
  if (webhook) {
    const { throughput: t, fixedRate: f } = webhook;
    rows.push(
      row(
        'webhook ingest (service listener: verify + store) req/s vs bare fastify 204, same run',
        `${t.webhook.requestsPerSec.toFixed(0)} vs ${t.bareRoute.requestsPerSec.toFixed(0)} (${(t.ratio * 100).toFixed(0)} %)`,
        '≥ 60 % of bare',
        t.ratio >= 0.6,
      ),
    );
    rows.push(
      row(
        `webhook ingest p99 at ${f.webhook.requestsPerSec.toFixed(0)} req/s`,
        `${f.webhook.p99Ms} ms (bare ${f.bareRoute.p99Ms} ms)`,
        '< 10 ms',
        f.webhook.p99Ms < 10,
      ),
    );
  } else {
    rows.push(row('webhook ingest (scripts/bench/webhook.mjs)', 'n/a', 'webhook.mjs did not produce results', null));
  }
  log('ingest: naive handler vs bare route');
  const peer = await naiveVsBare({ duration, connections, rate });
  rows.push(
    row(
      '  peer: naive handler (parse → verify → insert, one transaction per request) req/s vs bare 204, same run',
      `${peer.naive.requestsPerSec.toFixed(0)} vs ${peer.bare.requestsPerSec.toFixed(0)} (${(peer.ratio * 100).toFixed(0)} %)`,
      'peer row',
      null,
    ),
  );
  rows.push(
    row(
      `  peer: naive handler p99 at ${peer.naiveAtRate.requestsPerSec.toFixed(0)} req/s`,
      `${peer.naiveAtRate.p99Ms} ms`,
      'peer row',
      null,
    ),
  );
  return { name: 'ingest', settings: { duration, connections, rate }, results: { webhook, peer }, rows };
}
