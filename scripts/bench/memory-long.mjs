#!/usr/bin/env node
/**
 * Is it a leak? Runs the compiled service (demo configuration, MQTT to the local broker when one
 * listens on 1883) through N paid orders and samples, every 5 s inside the service, the JavaScript
 * heap after two full GCs (`--expose-gc`) beside RSS and anonymous memory. A leak shows as a heap
 * that keeps growing; an allocator reaching its high-water mark shows as RSS that levels off while
 * the heap stays flat.
 *
 *   npm run build && node scripts/bench/memory-long.mjs [--orders 40000]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createServiceProcess, freePort } from '../soak/service.mjs';
import { postJson, waitFor } from './lib.mjs';
import { brokerListening, holdToUnitMemory } from './resources.mjs';

const { values } = parseArgs({ options: { orders: { type: 'string', default: '40000' } } });
const ORDERS = Number(values.orders);
const dir = mkdtempSync(join(tmpdir(), 'vendgate-memory-'));
const samples = join(dir, 'samples.log');
const probe = join(dir, 'probe.cjs');
writeFileSync(
  probe,
  `
const fs = require('fs');
setInterval(() => {
  global.gc(); global.gc();
  const m = process.memoryUsage();
  const anon = Number((fs.readFileSync('/proc/self/smaps_rollup', 'utf8').match(/^Anonymous:\\s+(\\d+)/m) || [])[1] || 0) * 1024;
  fs.appendFileSync(${JSON.stringify(samples)}, JSON.stringify({ heapUsed: m.heapUsed, heapTotal: m.heapTotal, rss: m.rss, anon }) + '\\n');
}, 5000).unref();
`,
);

// The heap sized as on a device: the unit's MemoryMax= (no V8 flag on its command line since the eleventh round).
holdToUnitMemory();
const broker = await brokerListening();
const localPort = await freePort();
const webhookPort = await freePort();
const service = createServiceProcess({
  configPath: join(dir, 'config.yaml'),
  config: () => ({
    device: { id: 'memory', mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
    provider: { name: 'sandbox' },
    http: { local: { host: '127.0.0.1', port: localPort, ordersPerMinute: 1_000_000 }, webhook: { host: '127.0.0.1', port: webhookPort } },
    storage: { path: join(dir, 'vendgate.db') },
    actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl'), durationMs: 0 } },
    mqtt: broker ? { url: 'mqtt://127.0.0.1:1883', prefix: `memory-${process.pid}` } : { url: '' },
    log: { level: 'info' },
  }),
  env: { NODE_OPTIONS: `--expose-gc --require ${probe}` },
});

const mb = (bytes) => (bytes / 1e6).toFixed(1);
const last = () => {
  const lines = readFileSync(samples, 'utf8').trim().split('\n');
  return JSON.parse(lines.at(-1));
};
try {
  await service.start();
  const url = `http://127.0.0.1:${localPort}`;
  const started = Date.now();
  process.stdout.write('orders      s   heap used MB   heap total MB   RSS MB   anonymous MB\n');
  for (let i = 1; i <= ORDERS; i += 1) {
    const created = await postJson(`${url}/api/orders`, { slot: 'A1' });
    if (created.status !== 201) throw new Error(`create answered ${created.status}`);
    await postJson(`${url}/sandbox/pay/${created.body.invoiceId}`);
    await waitFor(async () => (await fetch(`${url}/api/orders/${created.body.orderId}`).then((r) => r.json())).state === 'vended', {
      intervalMs: 2,
      what: 'vended',
    });
    if (i % 2_000 === 0 || i === ORDERS) {
      await waitFor(
        () => {
          try {
            return last();
          } catch {
            return null;
          }
        },
        { intervalMs: 200, what: 'a memory sample' },
      );
      const s = last();
      process.stdout.write(
        `${String(i).padStart(6)} ${String(Math.round((Date.now() - started) / 1000)).padStart(6)}   ${mb(s.heapUsed).padStart(12)}   ${mb(s.heapTotal).padStart(13)}   ${mb(s.rss).padStart(6)}   ${mb(s.anon).padStart(12)}\n`,
      );
    }
  }
} finally {
  await service.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
