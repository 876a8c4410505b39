import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSimulator } from '../../dist/simulator/index.js';
import { createKaspiRelay } from '../../dist/fleet-relay/index.js';
import { silentLogger } from '../../dist/util/index.js';
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
    ...(provider === 'kaspi' ? { currency: 'KZT' } : {}),
    ...(webhooks && provider === 'gerege' ? { webhookUrl: `http://127.0.0.1:${webhookPort}/webhooks/gerege` } : {}),
  });
  await sim.start();
  // Kaspi: the service calls the fleet relay's Kaspi caller (in this bench process, its journal on
  // disk in the bench directory), which calls the simulator: the path a Pi's payment takes.
  const kaspiSecret = 'bench-kaspi-device-secret-0001';
  const kaspiRelay =
    provider === 'kaspi'
      ? createKaspiRelay(
          {
            headersTimeoutMs: 5_000,
            requestTimeoutMs: 30_000,
            idleTimeoutMs: 35_000,
            keepAliveTimeoutMs: 5_000,
            maxRequestsPerSocket: 1_000,
            maxConnections: 1_024,
            host: '127.0.0.1',
            port: 0,
            bodyLimitBytes: 4_096,
            maxCallsPerDevicePerMinute: 100_000,
            toleranceSec: 300,
            baseUrl: sim.url,
            organizationBin: sim.info().kaspi.organizationBin,
            livemode: false,
            journalPath: join(dir, 'kaspi-relay.db'),
            kaspiTimeoutMs: 5_000,
            apiKey: sim.info().kaspi.apiKey,
            devices: new Map([['bench-001', { deviceToken: sim.info().kaspi.deviceTokens[0], secrets: [kaspiSecret] }]]),
          },
          { logger: silentLogger() },
        )
      : null;
  const kaspiUrl = kaspiRelay ? (await kaspiRelay.start()).url : null;
  // QPay calls each invoice's callback_url (unsigned): the listener, or a closed port for "poll only".
  const providerSettings =
    provider === 'kaspi'
      ? { name: 'kaspi', baseUrl: kaspiUrl, invoiceTtlSec }
      : provider === 'qpay'
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
      device: {
        id: 'bench-001',
        mode: 'vending',
        currency: provider === 'kaspi' ? 'KZT' : 'MNT',
        catalog: [{ slot: 'A1', name: 'Water', price: 1500 }],
      },
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
    env: {
      VENDGATE_PROVIDER_CLIENT_SECRET: provider === 'kaspi' ? kaspiSecret : 'sim-secret',
      VENDGATE_WEBHOOK_SECRETS: 'whsec_simulator',
      ...more.env,
    },
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
      await kaspiRelay?.stop();
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
