import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createRelay } from '../../src/fleet-relay/index.js';
import { createProvider } from '../../src/payments/index.js';
import { parseSettings } from '../../src/settings/index.js';
import { loadRelaySettings } from '../../src/settings/fleet-relay/index.js';
import { createSimulator } from '../../src/simulator/index.js';
import { silentLogger } from '../../src/util/index.js';
import { freePort } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

/**
 * `vendgate relay` with `relay.kaspi.enabled`: the settings file, the devices file and the
 * environment build the Kaspi caller beside the webhook listener, and a device is served by it.
 */
const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const SECRET = 'relay-settings-device-secret-01';

async function files(options: { mode?: number; kaspiOnly?: boolean } = {}) {
  const dir = tempDir('vendgate-kaspi-relay-settings-');
  cleanup.push(() => dir.cleanup());
  const sim = createSimulator({ provider: 'kaspi', currency: 'KZT' });
  await sim.start();
  cleanup.push(() => sim.stop());
  const devicesFile = join(dir.path, 'kaspi-devices.json');
  writeFileSync(
    devicesFile,
    JSON.stringify({ devices: { 'vm-001': { deviceToken: sim.info().kaspi!.deviceTokens[0], secrets: [SECRET] } } }),
  );
  chmodSync(devicesFile, options.mode ?? 0o600);
  const port = await freePort();
  const webhookPort = await freePort();
  const config = join(dir.path, 'relay.yaml');
  writeFileSync(
    config,
    [
      'relay:',
      '  host: 127.0.0.1',
      `  port: ${options.kaspiOnly ? webhookPort : 0}`,
      ...(options.kaspiOnly ? ['  providers: []'] : []),
      '  kaspi:',
      '    enabled: true',
      '    host: 127.0.0.1',
      `    port: ${port}`,
      `    baseUrl: ${sim.url}`,
      '    scheme: easy',
      `    organizationBin: "${sim.info().kaspi!.organizationBin}"`,
      `    devicesFile: ${devicesFile}`,
      `    journalPath: ${join(dir.path, 'kaspi.db')}`,
      ...(options.kaspiOnly ? [] : ['mqtt:', '  url: mqtt://127.0.0.1:1', '  reconnectMinMs: 60000']),
      'log:',
      '  level: silent',
    ].join('\n'),
  );
  const env: Record<string, string> = {
    ...(options.kaspiOnly ? {} : { VENDGATE_WEBHOOK_SECRETS: 'whsec_x' }),
    VENDGATE_RELAY_KASPI_API_KEY: sim.info().kaspi!.apiKey!,
  };
  return { sim, config, env, port, webhookPort };
}

function deviceOf(port: number) {
  return createProvider(
    { clock: { now: () => Date.now() }, logger: silentLogger() },
    parseSettings({
      device: { id: 'vm-001', currency: 'KZT', catalog: [{ slot: 'A1', name: 'Cola', price: 500 }] },
      provider: { name: 'kaspi', baseUrl: `http://127.0.0.1:${port}`, clientSecret: SECRET },
    }),
  );
}

const cola = (n: number) => ({
  idempotencyKey: `vm-001-db1-${n}-pay`,
  reference: `vm-001-db1-${n}`,
  amount: 500,
  currency: 'KZT',
  description: 'Cola',
  expiresInSec: 120,
  captureMode: 'automatic' as const,
});

describe('vendgate relay: the Kaspi caller from its settings', () => {
  it('starts beside the webhook listener and serves a device: create, pay, read; the API key only from the environment', async () => {
    const { sim, config, env, port } = await files();
    const loaded = loadRelaySettings({ path: config, env });
    expect(loaded.environment).toContain('VENDGATE_RELAY_KASPI_API_KEY');
    const relay = createRelay(loaded.settings, { logger: pino({ level: 'silent' }), lookup: null });
    cleanup.push(() => relay.stop());
    await relay.start();
    const device = await deviceOf(port);
    const qr = await device.createInvoice(cola(1));
    await sim.pay(qr.id);
    expect(await device.getInvoice(qr.id)).toMatchObject({ status: 'paid', amount: 500 });
    expect(relay.stats().kaspi).toMatchObject({ calls: { 'create:created': 1, 'read:Processed': 1 }, creates: { created: 1 } });
  });

  it('a Kaspi-only relay (providers: [], no broker, no webhook secret) serves a device, and has no webhook listener', async () => {
    const { sim, config, env, port, webhookPort } = await files({ kaspiOnly: true });
    const loaded = loadRelaySettings({ path: config, env });
    expect(loaded.settings.relay.providers).toEqual([]);
    const relay = createRelay(loaded.settings, { logger: pino({ level: 'silent' }), lookup: null });
    cleanup.push(() => relay.stop());
    const listening = await relay.start();
    expect(listening.port).toBe(port);
    expect(relay.ready()).toBe(true);

    const device = await deviceOf(port);
    const qr = await device.createInvoice(cola(2));
    expect(sim.records().createCalls.map((c) => c.outcome)).toEqual(['created']);
    await sim.pay(qr.id);
    expect(await device.getInvoice(qr.id)).toMatchObject({ status: 'paid', amount: 500 });
    // Nothing listens for webhooks, and no broker was dialled.
    await expect(fetch(`http://127.0.0.1:${webhookPort}/webhooks/health`)).rejects.toThrow();
    expect(relay.stats()).toMatchObject({ brokerConnected: false, kaspi: { creates: { created: 1 } } });
  });

  it('refuses an API key in the file, and a devices file others can read', async () => {
    const { config, env } = await files({ mode: 0o644 });
    const loaded = loadRelaySettings({ path: config, env });
    expect(() => createRelay(loaded.settings, { logger: pino({ level: 'silent' }), lookup: null })).toThrow(/chmod 600/);
    writeFileSync(config, 'relay:\n  kaspi:\n    apiKey: in-the-file\nmqtt:\n  url: mqtt://127.0.0.1:1\n');
    expect(() => loadRelaySettings({ path: config, env })).toThrow(/VENDGATE_RELAY_KASPI_API_KEY/);
  });
});
