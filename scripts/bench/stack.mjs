import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSimulator } from '../../dist/simulator/index.js';
import { createServiceProcess, freePort } from '../soak/service.mjs';

/**
 * The real compiled service against a Gerege simulator without faults: the stack the latency and
 * provider-call benchmarks measure. `webhooks: false` leaves the simulator without a webhook URL, so
 * the poller is the only channel. `withSim(sim)` adds settings and environment that need the running
 * simulator (its URL: the fiscal registers it serves).
 */
export async function startGeregeStack({
  webhooks,
  intervalMs,
  invoiceTtlSec = 120,
  seed = 1,
  extra = {},
  withSim = null,
  provider = 'gerege',
}) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-'));
  const localPort = await freePort();
  const webhookPort = await freePort();
  const simLogPath = join(dir, 'actuations.jsonl');
  const sim = createSimulator({
    provider,
    seed,
    ...(webhooks && provider === 'gerege' ? { webhookUrl: `http://127.0.0.1:${webhookPort}/webhooks/gerege` } : {}),
  });
  await sim.start();
  // QPay calls each invoice's callback_url (unsigned): the listener, or a closed port for "poll only".
  const providerSettings =
    provider === 'qpay'
      ? {
          name: 'qpay',
          baseUrl: sim.url,
          clientId: 'sim-client',
          invoiceCode: sim.info().invoiceCode,
          callbackUrl: `http://127.0.0.1:${webhooks ? webhookPort : 1}/webhooks/qpay`,
          invoiceTtlSec,
        }
      : { name: 'gerege', baseUrl: sim.url, clientId: 'sim-client', invoiceTtlSec };
  const more = withSim ? withSim(sim) : { extra: {}, env: {} };
  const service = createServiceProcess({
    configPath: join(dir, 'config.yaml'),
    config: () => ({
      device: { id: 'bench-001', mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
      provider: providerSettings,
      poll: { intervalMs },
      http: {
        local: { host: '127.0.0.1', port: localPort, ordersPerMinute: 1_000_000 },
        webhook: { host: '127.0.0.1', port: webhookPort },
      },
      storage: { path: join(dir, 'vendgate.db') },
      // 0 ms: the figure is the software path, not a simulated motor.
      actuator: { kind: 'sim', sim: { logPath: simLogPath, durationMs: 0 } },
      mqtt: { url: '' },
      log: { level: 'info' },
      ...extra,
      ...more.extra,
    }),
    env: { VENDGATE_PROVIDER_CLIENT_SECRET: 'sim-secret', VENDGATE_WEBHOOK_SECRETS: 'whsec_simulator', ...more.env },
  });
  const { readyMs } = await service.start();
  return {
    sim,
    service,
    dir,
    simLogPath,
    readyMs,
    localUrl: `http://127.0.0.1:${localPort}`,
    async stop() {
      await service.kill('SIGTERM');
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
