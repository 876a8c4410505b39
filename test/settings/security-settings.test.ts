import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadSettings, parseSettings, priceBoundsFor, priceProblems } from '../../src/settings/index.js';
import { loadRelaySettings } from '../../src/settings/fleet-relay/index.js';
import { tempDir } from '../helpers/temp.js';
import { generateOperatorKey } from '../../src/mqtt/index.js';
import { settingsProblems } from '../helpers/core.js';

const device = { id: 'vm-001', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] };

describe('the settings that keep commands to the operator', () => {
  it('the webhook listener binds 127.0.0.1 by default: the tunnel reaches it on loopback', () => {
    expect(parseSettings({ device }).http.webhook.host).toBe('127.0.0.1');
  });

  it('live mode refuses plaintext MQTT unless mqtt.allowPlaintext: true (a LAN-only broker); TLS and embedded are fine', () => {
    const live = { ...device, livemode: true };
    expect(settingsProblems(() => parseSettings({ device: live, mqtt: { url: 'mqtt://10.0.0.5:1883' } }))).toEqual([
      expect.stringMatching(/^mqtt\.url: live mode .* use mqtts:\/\/ .* mqtt\.allowPlaintext: true/),
    ]);
    expect(settingsProblems(() => parseSettings({ device: live, mqtt: { url: 'ws://10.0.0.5:9001' } }))).toHaveLength(1);
    expect(parseSettings({ device: live, mqtt: { url: 'mqtt://10.0.0.5:1883', allowPlaintext: true } }).mqtt.allowPlaintext).toBe(true);
    expect(settingsProblems(() => parseSettings({ device: live, mqtt: { url: 'mqtts://broker.example:8883' } }))).toEqual([]);
    expect(settingsProblems(() => parseSettings({ device: live, mqtt: { url: 'embedded' } }))).toEqual([]);
    // Test mode (the demo) is not held to it.
    expect(settingsProblems(() => parseSettings({ device, mqtt: { url: 'mqtt://10.0.0.5:1883' } }))).toEqual([]);
  });

  it('operator keys: ed25519 public keys with unique ids; anything else is refused with its path', () => {
    const { publicKey } = generateOperatorKey();
    expect(parseSettings({ device, commands: { keys: [{ id: 'ops-1', publicKey }] } }).commands.keys).toEqual([{ id: 'ops-1', publicKey }]);
    expect(
      settingsProblems(() =>
        parseSettings({
          device,
          commands: {
            keys: [
              { id: 'ops-1', publicKey },
              { id: 'ops-1', publicKey },
              { id: 'bad id', publicKey: 'not-a-key' },
            ],
          },
        }),
      ),
    ).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^commands\.keys\.1\.id: key id "ops-1" appears twice/),
        expect.stringMatching(/^commands\.keys\.2\.id: /),
        expect.stringMatching(/^commands\.keys\.2\.publicKey: an ed25519 public key/),
      ]),
    );
    // An RSA or P-256 key is not ed25519.
    expect(
      settingsProblems(() =>
        parseSettings({ device, commands: { keys: [{ id: 'ec', publicKey: 'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE' + 'A'.repeat(86) }] } }),
      ),
    ).toHaveLength(1);
  });

  it("price bounds: the settings' own catalog is held to them too, and a floor above its ceiling is refused", () => {
    expect(settingsProblems(() => parseSettings({ device, pricing: { floor: 2000 } }))).toEqual([
      'device.catalog.0.price: 1500 for slot A1 is below the floor 2000 (pricing in the local settings)',
    ]);
    expect(settingsProblems(() => parseSettings({ device, pricing: { slots: { A1: { ceiling: 1000 } } } }))).toEqual([
      'device.catalog.0.price: 1500 for slot A1 is above the ceiling 1000 (pricing in the local settings)',
    ]);
    expect(
      settingsProblems(() => parseSettings({ device, pricing: { floor: 100, ceiling: 50, slots: { A1: { floor: 900, ceiling: 800 } } } })),
    ).toEqual(expect.arrayContaining([expect.stringMatching(/^pricing\.floor: /), expect.stringMatching(/^pricing\.slots\.A1\.floor: /)]));
    expect(parseSettings({ device, pricing: { floor: 1000, ceiling: 5000 } }).pricing).toMatchObject({ floor: 1000, ceiling: 5000 });
  });

  it("a slot's price bounds only narrow the global ones: a wider slot bound is refused, and never lets a price past the global floor or ceiling", () => {
    expect(
      settingsProblems(() =>
        parseSettings({ device, pricing: { floor: 1000, ceiling: 5000, slots: { A1: { floor: 10, ceiling: 90_000 } } } }),
      ),
    ).toEqual([
      "pricing.slots.A1.floor: 10 is below the global floor 1000: a slot's bounds may only narrow the global ones",
      "pricing.slots.A1.ceiling: 90000 is above the global ceiling 5000: a slot's bounds may only narrow the global ones",
    ]);
    // Bounds built without the schema (as a caller could) still hold the global range.
    const widening = { floor: 1000, ceiling: 5000, slots: { A1: { floor: 10, ceiling: 90_000 } } };
    expect(priceBoundsFor(widening, 'A1')).toEqual({ floor: 1000, ceiling: 5000 });
    expect(
      priceProblems(widening, [
        { slot: 'A1', price: 500 },
        { slot: 'A1', price: 60_000 },
      ]).map((p) => p.message),
    ).toEqual([
      '500 for slot A1 is below the floor 1000 (pricing in the local settings)',
      '60000 for slot A1 is above the ceiling 5000 (pricing in the local settings)',
    ]);
    // A narrower slot bound holds inside the global range.
    expect(priceBoundsFor({ floor: 1000, ceiling: 5000, slots: { A1: { floor: 2000, ceiling: 3000 } } }, 'A1')).toEqual({
      floor: 2000,
      ceiling: 3000,
    });
    expect(parseSettings({ device, pricing: { floor: 1000, ceiling: 5000, slots: { A1: { floor: 1200 } } } }).pricing.slots.A1).toEqual({
      floor: 1200,
    });
  });

  it('secrets come from the systemd credential (LoadCredential) without entering the environment', () => {
    const dir = tempDir();
    try {
      const credentials = join(dir.path, 'credentials');
      mkdirSync(credentials);
      writeFileSync(
        join(credentials, 'secrets.env'),
        '# comment\nVENDGATE_MQTT_PASSWORD=from-credential\nVENDGATE_WEBHOOK_SECRETS=whsec_a, whsec_b\nOTHER=ignored\n',
      );
      writeFileSync(join(credentials, 'relay-secrets.env'), 'VENDGATE_MQTT_PASSWORD=relay-pw\nVENDGATE_WEBHOOK_SECRETS=w1\n');
      const config = join(dir.path, 'config.yaml');
      writeFileSync(config, stringify({ device, mqtt: { url: 'mqtts://broker.example:8883', username: 'vm-001' } }));
      const env: NodeJS.ProcessEnv = { CREDENTIALS_DIRECTORY: credentials, VENDGATE_MQTT_PASSWORD: 'from-environment' };
      const { settings } = loadSettings({ path: config, env });
      expect(settings.mqtt.password).toBe('from-credential');
      expect(settings.provider.webhookSecrets).toEqual(['whsec_a', 'whsec_b']);
      expect(env).toEqual({ CREDENTIALS_DIRECTORY: credentials, VENDGATE_MQTT_PASSWORD: 'from-environment' });
      const relayConfig = join(dir.path, 'relay.yaml');
      writeFileSync(
        relayConfig,
        stringify({ relay: { providers: ['gerege'] }, mqtt: { url: 'mqtts://broker.example:8883', username: 'relay' } }),
      );
      const relay = loadRelaySettings({ path: relayConfig, env: { CREDENTIALS_DIRECTORY: credentials } });
      expect(relay.settings.mqtt.password).toBe('relay-pw');
    } finally {
      dir.cleanup();
    }
  });
});
