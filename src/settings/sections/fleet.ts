import * as z from 'zod';

/**
 * Fleet mode (docs/fleet.md): where this device's webhooks come from.
 *   tunnel — the provider POSTs to this device's webhook listener through its own tunnel (one device);
 *   broker — `vendgate relay` receives the fleet's webhooks and the operator's broker carries this
 *            device's to it; the webhook listener is then bound to 127.0.0.1 only (nothing to expose);
 *   both   — either path (a migration from tunnels to the relay); the inbox dedupes by event id.
 * broker and both need mqtt.url to name a broker.
 */
export const fleetSchema = () =>
  z.object({
    webhookSource: z.enum(['tunnel', 'broker', 'both']).default('tunnel'),
  });
