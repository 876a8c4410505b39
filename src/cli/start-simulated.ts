/**
 * `vendgate start --provider qpay|kaspi`: the demo with a real adapter instead of the sandbox. The
 * provider's simulator runs in this process on a free loopback port, and the settings point the
 * adapter at it; the simulator's callbacks reach this gateway's own webhook listener, as a tunnel
 * would carry them. Kaspi: the fleet relay's Kaspi caller runs in this process too (its journal in
 * a temporary directory), between the adapter and the simulator, as it would on the operator's
 * server. Test money only: the simulator is never a real provider.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Settings } from '../settings/index.js';
import { WEBHOOK_LISTENER_DEFAULTS } from '../util/http-listener.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { UsageError } from './io.js';

export const SIMULATED_DEMO_PROVIDERS = ['qpay', 'kaspi'] as const;

export async function withSimulatedProvider(
  settings: Readonly<Settings>,
  provider: string,
  logger: Logger = silentLogger(),
): Promise<{ settings: Readonly<Settings>; stop: () => Promise<void>; url: string }> {
  if (!(SIMULATED_DEMO_PROVIDERS as readonly string[]).includes(provider))
    throw new UsageError(`--provider for the demo: ${SIMULATED_DEMO_PROVIDERS.join(', ')} (the sandbox needs none)`);
  if (settings.device.livemode) throw new UsageError('--provider runs against a simulator: set device.livemode to false');
  if (provider === 'kaspi') return withKaspi(settings, logger);
  const { createSimulator } = await import('../simulator/index.js');
  const webhookBase = `http://127.0.0.1:${settings.http.webhook.port}/webhooks/${provider}`;
  const sim = createSimulator({ provider: 'qpay', port: 0, currency: settings.device.currency });
  const { url } = await sim.start();
  const info = sim.info();
  const demo: Readonly<Settings> = Object.freeze({
    ...settings,
    provider: Object.freeze({
      ...settings.provider,
      name: 'qpay' as const,
      baseUrl: url,
      clientId: info.clientId,
      clientSecret: info.clientSecret,
      invoiceCode: info.invoiceCode,
      callbackUrl: webhookBase,
      captureMode: 'automatic' as const,
    }),
  });
  return { settings: demo, stop: () => sim.stop(), url };
}

/** Kaspi simulator (easy scheme on loopback) → the relay's Kaspi caller → this device's adapter; tenge. */
async function withKaspi(settings: Readonly<Settings>, logger: Logger) {
  const { createSimulator } = await import('../simulator/index.js');
  const { createKaspiRelay } = await import('../fleet-relay/index.js');
  const sim = createSimulator({ provider: 'kaspi', port: 0, currency: 'KZT' });
  const { url } = await sim.start();
  const kaspi = sim.info().kaspi;
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-demo-kaspi-'));
  const secret = randomBytes(24).toString('hex');
  const relay = createKaspiRelay(
    {
      ...WEBHOOK_LISTENER_DEFAULTS,
      host: '127.0.0.1',
      port: 0,
      bodyLimitBytes: 4_096,
      maxCallsPerDevicePerMinute: 600,
      toleranceSec: 300,
      baseUrl: url,
      organizationBin: kaspi?.organizationBin ?? '',
      livemode: false,
      journalPath: join(dir, 'kaspi.db'),
      kaspiTimeoutMs: 5_000,
      ...(kaspi?.apiKey ? { apiKey: kaspi.apiKey } : {}),
      devices: new Map([[settings.device.id, { deviceToken: kaspi?.deviceTokens[0] ?? '', secrets: [secret] }]]),
    },
    { logger },
  );
  const stopAll = async () => {
    await relay.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  let relayUrl: string;
  try {
    relayUrl = (await relay.start()).url;
  } catch (err) {
    await stopAll();
    throw err;
  }
  const demo: Readonly<Settings> = Object.freeze({
    ...settings,
    // Kaspi charges in tenge.
    device: Object.freeze({ ...settings.device, currency: 'KZT' }),
    provider: Object.freeze({
      ...settings.provider,
      name: 'kaspi' as const,
      baseUrl: relayUrl,
      clientSecret: secret,
      captureMode: 'automatic' as const,
    }),
  });
  return { settings: demo, stop: stopAll, url };
}
