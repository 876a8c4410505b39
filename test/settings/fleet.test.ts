import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSettings } from '../../src/settings/index.js';
import { loadRelaySettings, parseRelaySettings } from '../../src/settings/fleet-relay/index.js';
import { tempDir } from '../helpers/temp.js';
import { settingsProblems } from '../helpers/core.js';

const RELAY_EXAMPLE = new URL('../../config/fleet/relay.yaml', import.meta.url).pathname;
const device = { id: 'vm-001', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] };
const gerege = { name: 'gerege', baseUrl: 'https://api.example', clientId: 'c', clientSecret: 's', webhookSecrets: ['w'] };

describe('fleet settings', () => {
  it('a device takes its webhooks from the tunnel unless told otherwise, and broker mode needs a broker', () => {
    expect(parseSettings({ device }).fleet.webhookSource).toBe('tunnel');
    expect(
      parseSettings({ device, provider: gerege, mqtt: { url: 'mqtt://broker:1883' }, fleet: { webhookSource: 'broker' } }).fleet
        .webhookSource,
    ).toBe('broker');
    expect(
      settingsProblems(() => parseSettings({ device, provider: gerege, mqtt: { url: '' }, fleet: { webhookSource: 'both' } })),
    ).toEqual(["fleet.webhookSource: both needs a broker: set mqtt.url (the fleet's broker), or use tunnel"]);
    expect(settingsProblems(() => parseSettings({ device, fleet: { webhookSource: 'relay' } }))[0]).toMatch(/^fleet\.webhookSource: /);
  });

  it('the shipped relay example loads with its secrets from the environment', () => {
    const { settings, environment } = loadRelaySettings({
      path: RELAY_EXAMPLE,
      env: {
        VENDGATE_WEBHOOK_SECRETS_GEREGE: 'whsec_new,whsec_old',
        VENDGATE_RELAY_LOOKUP_CLIENT_SECRET: 'ro',
        VENDGATE_MQTT_PASSWORD: 'pw',
      },
    });
    expect(settings.relay.webhookSecrets).toEqual({ gerege: ['whsec_new', 'whsec_old'] });
    expect(settings.relay.routeLookup.clientSecret).toBe('ro');
    expect(environment.sort()).toEqual([
      'VENDGATE_MQTT_PASSWORD',
      'VENDGATE_RELAY_LOOKUP_CLIENT_SECRET',
      'VENDGATE_WEBHOOK_SECRETS_GEREGE',
    ]);
  });

  it('the relay lists every problem at once, and refuses secrets in its file', () => {
    expect(
      settingsProblems(() =>
        parseRelaySettings({ relay: { providers: ['gerege', 'stripe'], port: 70_000 }, mqtt: { url: 'embedded' } }),
      ).sort(),
    ).toEqual(
      [
        "mqtt.url: the relay publishes to the fleet's broker: give its URL (mqtt://host:1883 or mqtts://host:8883)",
        'relay.port: Too big: expected number to be <=65535',
        'relay.providers.1: Invalid option: expected one of "gerege"|"qutpay"|"qpay"',
      ].sort(),
    );
    expect(
      settingsProblems(() =>
        parseRelaySettings({ relay: { publishTimeOutMs: 100, webhookSecrets: { gerege: ['w'] } }, mqtt: { url: 'mqtt://broker:1883' } }),
      ),
    ).toEqual(['relay.publishTimeOutMs: unknown key; did you mean "publishTimeoutMs"?']);
    const dir = tempDir('vendgate-relay-settings-');
    try {
      const path = join(dir.path, 'relay.yaml');
      writeFileSync(path, 'relay:\n  webhookSecrets: { gerege: [whsec_x] }\nmqtt:\n  url: mqtt://broker:1883\n');
      expect(settingsProblems(() => loadRelaySettings({ path, env: {} }))[0]).toMatch(/secrets are not read from the file/);
    } finally {
      dir.cleanup();
    }
  });

  it('a Kaspi-only relay needs no webhook provider, secret or broker; a relay that serves nothing is refused in one line', () => {
    const kaspi = { enabled: true, baseUrl: 'https://kaspi.example', scheme: 'easy', organizationBin: '123456789012', apiKey: 'k' };
    const only = parseRelaySettings({ relay: { providers: [], kaspi } });
    expect(only.relay.providers).toEqual([]);
    expect(only.relay.webhookSecrets).toEqual({});
    expect(settingsProblems(() => parseRelaySettings({ relay: { providers: [] }, mqtt: { url: 'embedded' } }))).toEqual([
      'relay.providers: empty and relay.kaspi.enabled is not true: this relay would serve nothing (list a webhook provider, or enable the Kaspi caller)',
    ]);
    // A webhook provider beside Kaspi still needs its secret and the fleet's broker.
    expect(settingsProblems(() => parseRelaySettings({ relay: { providers: ['gerege'], kaspi } })).sort()).toEqual([
      "mqtt.url: the relay publishes to the fleet's broker: give its URL (mqtt://host:1883 or mqtts://host:8883)",
      'relay.webhookSecrets.gerege: required: set VENDGATE_WEBHOOK_SECRETS_GEREGE or VENDGATE_WEBHOOK_SECRETS (comma-separated)',
    ]);
  });
});
