import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSettings, parseSettings, SettingsError, DEMO_CONFIG_PATH } from '../../src/settings/index.js';
import { tempDir } from '../helpers/temp.js';

describe('settings', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => dir.cleanup());

  const write = (text: string) => {
    const path = join(dir.path, 'config.yaml');
    writeFileSync(path, text);
    return path;
  };

  it('the shipped demo configuration is valid and uses the embedded defaults', () => {
    const { settings } = loadSettings({ path: DEMO_CONFIG_PATH, env: {} });
    expect(settings.provider.name).toBe('sandbox');
    expect(settings.actuator.kind).toBe('sim');
    expect(settings.mqtt.url).toBe('embedded');
    expect(settings.http.local.host).toBe('127.0.0.1');
    expect(Object.isFrozen(settings.device.catalog)).toBe(true);
  });

  it('reports every problem at once as path: message', () => {
    const path = write(`
device:
  id: Bad Id
  mode: vending
  catalog: []
provider:
  name: gerege
poll:
  intervalMs: 5
`);
    const error = (() => {
      try {
        loadSettings({ path, env: {} });
      } catch (e) {
        return e;
      }
    })() as SettingsError;
    expect(error).toBeInstanceOf(SettingsError);
    expect(error.code).toBe('VG_ERR_CONFIG_INVALID');
    const paths = error.problems.map((p) => p.split(':')[0]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'device.id',
        'device.catalog',
        'provider.baseUrl',
        'provider.clientId',
        'provider.clientSecret',
        'provider.webhookSecrets',
        'poll.intervalMs',
      ]),
    );
    expect(error.message).toContain(path);
  });

  it('rejects unknown top-level sections (a typo must not be silently ignored)', () => {
    expect(() => parseSettings({ device: { id: 'a', catalog: [{ slot: 'A1', name: 'x', price: 1 }] }, provder: {} })).toThrow(
      /provder|unrecognized/i,
    );
  });

  it('takes secrets only from the environment and refuses them in the file', () => {
    const inFile = write(
      'device: { id: d1, catalog: [{ slot: A1, name: x, price: 10 }] }\nprovider: { name: qutpay, baseUrl: "http://127.0.0.1:1", apiKey: qp_test_x }\n',
    );
    expect(() => loadSettings({ path: inFile, env: {} })).toThrow(/VENDGATE_PROVIDER_API_KEY/);
    const clean = write(
      'device: { id: d1, catalog: [{ slot: A1, name: x, price: 10 }] }\nprovider: { name: qutpay, baseUrl: "http://127.0.0.1:1" }\n',
    );
    const loaded = loadSettings({ path: clean, env: { VENDGATE_PROVIDER_API_KEY: 'qp_test_x', VENDGATE_WEBHOOK_SECRETS: 'a, b' } });
    expect(loaded.settings.provider.apiKey).toBe('qp_test_x');
    expect(loaded.settings.provider.webhookSecrets).toEqual(['a', 'b']);
    expect(loaded.environment).toEqual(['VENDGATE_PROVIDER_API_KEY', 'VENDGATE_WEBHOOK_SECRETS']);
  });

  it('names the line of a YAML syntax error', () => {
    const path = write('device:\n  id: [unclosed\n');
    expect(() => loadSettings({ path, env: {} })).toThrow(/not valid YAML at line \d+, column \d+/);
  });

  it('says which file could not be read', () => {
    expect(() => loadSettings({ path: join(dir.path, 'missing.yaml'), env: {} })).toThrow(/missing\.yaml[\s\S]*there is no such file/);
  });

  it('refuses duplicate slots and a turnstile without a fare', () => {
    expect(() =>
      parseSettings({
        device: {
          id: 'a',
          catalog: [
            { slot: 'A1', name: 'x', price: 1 },
            { slot: 'A1', name: 'y', price: 2 },
          ],
        },
      }),
    ).toThrow(/slot "A1" appears twice/);
    expect(() => parseSettings({ device: { id: 'a', mode: 'turnstile' } })).toThrow(/device\.fare/);
  });
});
