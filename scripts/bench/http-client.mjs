import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { unitStart, warnUnlessReleaseNode } from './resources.mjs';
import { median, row } from './lib.mjs';

/**
 * What the provider clients' HTTP calls leave resident: `calls` POSTs to a loopback node:http server,
 * made with Node's fetch (undici) and with util/http-fetch.ts (node:http, what the clients use since
 * the seventh round of "lean again"), each in a fresh process started with the unit's V8 flags and
 * environment. RSS after a full collection before the first call and after the last; alternating
 * runs, the median of each. Take it on the release's Node (docs/benchmarks.md, the how-to table).
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const HTTP_FETCH = join(ROOT, 'dist', 'util', 'http-fetch.js');

const CHILD = `
const http = require('node:http');
const [client, calls, module] = process.argv.slice(1);
const server = http.createServer((q, s) => { q.resume(); q.on('end', () => s.end('{"ok":true}')); });
server.listen(0, '127.0.0.1', async () => {
  const url = 'http://127.0.0.1:' + server.address().port + '/v2/invoice';
  // Both processes load util/http-fetch.ts (and with it the ES module loader) before the first reading.
  const { httpFetch } = await import(module);
  const use = client === 'fetch' ? fetch : httpFetch;
  const call = () => use(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":1500}' }).then((r) => r.text());
  const settle = async () => { await new Promise((r) => setTimeout(r, 1000)); globalThis.gc(); globalThis.gc(); return process.memoryUsage().rss; };
  const before = await settle();
  for (let i = 0; i < Number(calls); i += 1) await call();
  const after = await settle();
  process.stdout.write(JSON.stringify({ before, after }));
  server.close();
  process.exit(0);
});
`;

function runOnce(client, calls, unit) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...unit.nodeArgs, '--expose-gc', '-e', CHILD, client, String(calls), HTTP_FETCH], {
      env: { ...process.env, ...unit.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${client} run exited ${code}`))));
  });
}

export async function httpClientBench({ log, quick = false, calls = 200, runs = quick ? 3 : 7 }) {
  if (!existsSync(HTTP_FETCH)) throw new Error(`${HTTP_FETCH} does not exist: run npm run build first`);
  warnUnlessReleaseNode(log, 'http-client');
  const unit = unitStart();
  const mb = (bytes) => Math.round((bytes / 1048576) * 10) / 10;
  const results = { fetch: [], httpFetch: [] };
  for (let i = 0; i < runs; i += 1) {
    for (const client of i % 2 === 0 ? ['fetch', 'httpFetch'] : ['httpFetch', 'fetch']) {
      const { before, after } = await runOnce(client, calls, unit);
      results[client].push({ before: mb(before), after: mb(after), added: mb(after - before) });
    }
  }
  const added = (client) => median(results[client].map((r) => r.added));
  const after = (client) => median(results[client].map((r) => r.after));
  return {
    name: 'http-client',
    settings: { node: process.version, calls, runs, nodeFlags: unit.nodeArgs, env: unit.env },
    results,
    rows: [
      row(
        `RSS added by ${calls} loopback POSTs, median of ${runs} processes each (RSS after them): Node's fetch (undici); util/http-fetch.ts (node:http)`,
        `${added('fetch')} MB (${after('fetch')} MB); ${added('httpFetch')} MB (${after('httpFetch')} MB)`,
        'informational',
        null,
      ),
    ],
  };
}

// node scripts/bench/http-client.mjs [--calls 200] [--runs 7] [--quick]   (after npm run build)
if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { calls: { type: 'string' }, runs: { type: 'string' }, quick: { type: 'boolean' } } });
  const { loadavg } = await import('node:os');
  const result = await httpClientBench({
    log: (line) => process.stderr.write(`bench: ${line}\n`),
    quick: values.quick ?? false,
    ...(values.calls ? { calls: Number(values.calls) } : {}),
    ...(values.runs ? { runs: Number(values.runs) } : {}),
  });
  for (const r of result.rows) console.log(`${r.figure}: ${r.value}`);
  console.log(
    `${new Date().toISOString()} load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(JSON.stringify(result.results));
}
