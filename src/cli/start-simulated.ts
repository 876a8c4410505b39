/**
 * `vendgate start --provider qpay`: the demo with a real adapter instead of the sandbox. The
 * provider's simulator runs in this process on a free loopback port, and the settings point the
 * adapter at it; the simulator's callbacks reach this gateway's own webhook listener, as a tunnel
 * would carry them. Test money only: the simulator is never a real provider.
 */
import type { Settings } from '../settings/index.js';
import { UsageError } from './io.js';

export const SIMULATED_DEMO_PROVIDERS = ['qpay'] as const;

export async function withSimulatedProvider(
  settings: Readonly<Settings>,
  provider: string,
): Promise<{ settings: Readonly<Settings>; stop: () => Promise<void>; url: string }> {
  if (!(SIMULATED_DEMO_PROVIDERS as readonly string[]).includes(provider))
    throw new UsageError(`--provider for the demo: ${SIMULATED_DEMO_PROVIDERS.join(', ')} (the sandbox needs none)`);
  if (settings.device.livemode) throw new UsageError('--provider runs against a simulator: set device.livemode to false');
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
