/**
 * The fleet relay's Kaspi caller in this process, in front of a Kaspi simulator: what a device's
 * Kaspi adapter talks to. Real sockets on both sides, a real SQLite journal in a temp dir; the
 * client certificate (strong scheme) is the test-only material of test/mqtt/fixtures/tls.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKaspiRelay, type KaspiDevice } from '../../src/fleet-relay/index.js';
import { silentLogger, type Logger } from '../../src/util/index.js';
import { WEBHOOK_LISTENER_DEFAULTS } from '../../src/util/http-listener.js';
import type { Simulator } from '../../src/simulator/index.js';
import { tempDir } from './temp.js';

export const KASPI_DEVICE_SECRET = 'device-secret-vm-001-0123456789';
export const KASPI_OTHER_SECRET = 'device-secret-vm-002-0123456789';

const TLS = (name: string) => readFileSync(fileURLToPath(new URL(`../mqtt/fixtures/tls/${name}`, import.meta.url)));

/** Test-only TLS material: the simulator's server certificate, and the relay's client certificate, both from one CA. */
export const KASPI_TEST_TLS = {
  server: () => ({ key: TLS('server.key'), cert: TLS('server.pem'), ca: TLS('ca.pem') }),
  client: () => ({ key: TLS('client.key'), cert: TLS('client.pem'), ca: TLS('ca.pem') }),
};

export interface KaspiRelayForOptions {
  now?: () => number;
  kaspiTimeoutMs?: number;
  /** The relay presents no client certificate (strong scheme only). */
  withoutCertificate?: boolean;
  devices?: Map<string, KaspiDevice>;
  maxCallsPerDevicePerMinute?: number;
  logger?: Logger;
  journalPath?: string;
}

export async function startKaspiRelayFor(sim: Simulator, options: KaspiRelayForOptions = {}) {
  const info = sim.info().kaspi;
  if (!info) throw new Error('startKaspiRelayFor: the simulator is not Kaspi');
  const dir = options.journalPath ? null : tempDir('vendgate-kaspi-relay-');
  const devices =
    options.devices ??
    new Map<string, KaspiDevice>([
      ['vm-001', { deviceToken: info.deviceTokens[0]!, secrets: [KASPI_DEVICE_SECRET] }],
      ['vm-002', { deviceToken: info.deviceTokens[1]!, secrets: [KASPI_OTHER_SECRET] }],
    ]);
  const relay = createKaspiRelay(
    {
      ...WEBHOOK_LISTENER_DEFAULTS,
      host: '127.0.0.1',
      port: 0,
      bodyLimitBytes: 4_096,
      maxCallsPerDevicePerMinute: options.maxCallsPerDevicePerMinute ?? 100_000,
      toleranceSec: 300,
      baseUrl: sim.url,
      organizationBin: info.organizationBin,
      livemode: false,
      journalPath: options.journalPath ?? join(dir!.path, 'kaspi.db'),
      kaspiTimeoutMs: options.kaspiTimeoutMs ?? 5_000,
      devices,
      ...(info.scheme === 'strong' && !options.withoutCertificate ? { tls: KASPI_TEST_TLS.client() } : {}),
      ...(info.scheme === 'strong' && options.withoutCertificate ? { tls: { cert: '', key: '', ca: TLS('ca.pem') } } : {}),
      ...(info.apiKey ? { apiKey: info.apiKey } : {}),
    },
    { logger: options.logger ?? silentLogger(), ...(options.now ? { now: options.now } : {}) },
  );
  const { url } = await relay.start();
  return {
    url,
    relay,
    async stop() {
      await relay.stop();
      dir?.cleanup();
    },
  };
}
