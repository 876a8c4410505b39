import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServiceProcess, freePort } from '../soak/service.mjs';
import { percentiles, postJson, row, rssMb, sleep, waitFor } from './lib.mjs';

/**
 * Resident memory idle and after 10,000 orders, and start-up to ready, of the real service in its
 * demo configuration (sandbox provider in process, sim actuator), MQTT to the local broker when one
 * listens on 1883 (as on a device), otherwise off.
 */
export function brokerListening() {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port: 1883 });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

export async function resourcesBench({ log, quick }) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-'));
  const localPort = await freePort();
  const webhookPort = await freePort();
  const mqtt = await brokerListening();
  const service = createServiceProcess({
    configPath: join(dir, 'config.yaml'),
    config: () => ({
      device: { id: 'bench-rss', mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
      provider: { name: 'sandbox' },
      http: { local: { host: '127.0.0.1', port: localPort, ordersPerMinute: 1_000_000 }, webhook: { host: '127.0.0.1', port: webhookPort } },
      storage: { path: join(dir, 'vendgate.db') },
      actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl'), durationMs: 0 } },
      mqtt: mqtt ? { url: 'mqtt://127.0.0.1:1883', prefix: `bench-${process.pid}` } : { url: '' },
      log: { level: 'info' },
    }),
    env: {},
  });
  const localUrl = `http://127.0.0.1:${localPort}`;
  try {
    // Start-up to ready: process spawn → "vendgate ready" (the first run also creates the database).
    const readyMs = [];
    for (let i = 0; i < (quick ? 3 : 6); i += 1) {
      readyMs.push((await service.start()).readyMs);
      if (i < (quick ? 2 : 5)) await service.kill('SIGTERM');
    }
    const { pid } = service;
    // 5 s after ready the start-up garbage is still resident; V8 gives it back once the process has
    // been idle a while (its memory reducer). Both are reported; the settled one is the device's idle.
    await sleep(5_000);
    const earlyMb = rssMb(pid);
    await sleep(quick ? 10_000 : 55_000);
    const idleMb = rssMb(pid);

    const orders = quick ? 500 : 10_000;
    const started = Date.now();
    for (let i = 0; i < orders; i += 1) {
      const created = await postJson(`${localUrl}/api/orders`, { slot: 'A1' });
      if (created.status !== 201) throw new Error(`create answered ${created.status}`);
      await postJson(`${localUrl}/sandbox/pay/${created.body.invoiceId}`);
      await waitFor(async () => (await fetch(`${localUrl}/api/orders/${created.body.orderId}`).then((r) => r.json())).state === 'vended', { intervalMs: 2, what: 'vended' });
      if ((i + 1) % 2_000 === 0) log(`resources: ${i + 1} orders, RSS ${rssMb(pid)} MB`);
    }
    const ordersMs = Date.now() - started;
    await sleep(5_000);
    const afterMb = rssMb(pid);
    const firstReady = readyMs[0];
    const warm = percentiles(readyMs.slice(1));
    return {
      name: 'resources',
      settings: { mqtt: mqtt ? 'local broker on 1883' : 'off', orders },
      results: { earlyMb, idleMb, afterMb, orders, ordersMs, ordersPerSec: orders / (ordersMs / 1000), readyMs, firstReadyMs: firstReady, warmReadyMs: warm },
      rows: [
        row(`RSS idle, 60 s after ready (MQTT ${mqtt ? 'connected' : 'off'}); 5 s after ready`, `${idleMb} MB; ${earlyMb} MB`, '≤ 80 MB', idleMb <= 80),
        row(`RSS after ${orders.toLocaleString('en')} orders (paid and vended, ${(orders / (ordersMs / 1000)).toFixed(0)} orders/s)`, `${afterMb} MB`, 'informational', null),
        row('start-up to ready (spawn → "vendgate ready"), median of restarts; first start', `${warm.p50} ms; ${firstReady} ms`, '≤ 1000 ms', warm.p50 <= 1000 && firstReady <= 1000),
      ],
    };
  } finally {
    await service.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
