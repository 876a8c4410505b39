import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadSettings, parseSettings } from '../../src/settings/index.js';

const DIR = new URL('../../config/examples/', import.meta.url).pathname;
const FILES = readdirSync(DIR)
  .filter((name) => name.endsWith('.yaml'))
  .sort();

/** The secrets an example needs come from the environment, exactly as on a device. */
function envFor(raw: { provider?: { name?: string }; mqtt?: { username?: string } }): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  if (raw.provider?.name === 'gerege' || raw.provider?.name === 'qpay') env.VENDGATE_PROVIDER_CLIENT_SECRET = 'example-secret';
  if (raw.provider?.name === 'qutpay') env.VENDGATE_PROVIDER_API_KEY = 'qp_live_example';
  if (raw.provider?.name && raw.provider.name !== 'sandbox') env.VENDGATE_WEBHOOK_SECRETS = 'whsec_example';
  if (raw.mqtt?.username) env.VENDGATE_MQTT_PASSWORD = 'example-password';
  return env;
}

describe('config/examples', () => {
  it('has an example per provider and per machine type', () => {
    expect(FILES).toEqual(
      expect.arrayContaining([
        'sandbox.yaml',
        'gerege.yaml',
        'qutpay.yaml',
        'turnstile-passage.yaml',
        'pulse-machine.yaml',
        'serial-machine.yaml',
        'mdb-machine.yaml',
      ]),
    );
  });

  it.each(FILES)('%s passes parseSettings with its secrets from the environment, and holds no secret itself', (file) => {
    const text = readFileSync(`${DIR}${file}`, 'utf8');
    const raw = parse(text) as Record<string, any>;
    const loaded = loadSettings({ path: `${DIR}${file}`, env: envFor(raw) });
    expect(loaded.settings.device.id).toMatch(/^[a-z0-9-]+$/);
    // The loader refuses secrets in the file; the examples must not teach putting them there.
    expect(raw.provider?.clientSecret ?? raw.provider?.apiKey ?? raw.provider?.webhookSecrets ?? raw.mqtt?.password).toBeUndefined();
    expect(() =>
      parseSettings({
        ...raw,
        provider: { ...raw.provider, ...secretsOf(envFor(raw)) },
        mqtt: { ...raw.mqtt, ...mqttPassword(envFor(raw)) },
      }),
    ).not.toThrow();
  });

  it('the machine-type examples configure what their name says', () => {
    const load = (file: string) => {
      const raw = parse(readFileSync(`${DIR}${file}`, 'utf8')) as Record<string, any>;
      return loadSettings({ path: `${DIR}${file}`, env: envFor(raw) }).settings;
    };
    const turnstile = load('turnstile-passage.yaml');
    expect(turnstile.device.mode).toBe('turnstile');
    expect(turnstile.actuator.kind).toBe('relay');
    expect(turnstile.inputs.passage).toBeDefined();
    const pulse = load('pulse-machine.yaml');
    expect(pulse.actuator.relay.creditPerPulse).toBeGreaterThan(0);
    for (const item of pulse.device.catalog) expect(item.price % pulse.actuator.relay.creditPerPulse!).toBe(0);
    expect(load('serial-machine.yaml').actuator.serial).toMatchObject({ profile: 'line', statusCommand: expect.any(String) });
    expect(load('mdb-machine.yaml').actuator.serial.profile).toBe('mdb');
  });
});

function secretsOf(env: NodeJS.ProcessEnv) {
  return {
    ...(env.VENDGATE_PROVIDER_CLIENT_SECRET ? { clientSecret: env.VENDGATE_PROVIDER_CLIENT_SECRET } : {}),
    ...(env.VENDGATE_PROVIDER_API_KEY ? { apiKey: env.VENDGATE_PROVIDER_API_KEY } : {}),
    ...(env.VENDGATE_WEBHOOK_SECRETS ? { webhookSecrets: [env.VENDGATE_WEBHOOK_SECRETS] } : {}),
  };
}

function mqttPassword(env: NodeJS.ProcessEnv) {
  return env.VENDGATE_MQTT_PASSWORD ? { password: env.VENDGATE_MQTT_PASSWORD } : {};
}
