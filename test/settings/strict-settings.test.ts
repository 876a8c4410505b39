import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSettings, SettingsError, SECRET_SETTINGS } from '../../src/settings/index.js';
import { tempDir } from '../helpers/temp.js';

/** Settings that are wrong never start, and the message says exactly what is wrong and where. */
const base = () => ({
  device: { id: 'strict-test', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
  mqtt: { url: '' },
});

describe('strict settings', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => dir.cleanup());

  const problemsOf = (config: Record<string, unknown>): string[] => {
    const path = join(dir.path, 'config.yaml');
    writeFileSync(path, stringify(config));
    try {
      loadSettings({ path, env: {} });
    } catch (err) {
      expect(err).toBeInstanceOf(SettingsError);
      return (err as SettingsError).problems;
    }
    throw new Error('the configuration loaded');
  };

  it.each([
    ['device', 'livemod', true, 'device.livemod', 'livemode'],
    ['provider', 'captureMod', 'manual', 'provider.captureMod', 'captureMode'],
    ['mqtt', 'allowRemoteVnd', true, 'mqtt.allowRemoteVnd', 'allowRemoteVend'],
    ['storage', 'retentionDay', 7, 'storage.retentionDay', 'retentionDays'],
  ] as const)('a typo (%s.%s) is an error with "did you mean"', (section, key, value, path, suggestion) => {
    const config = base() as Record<string, any>;
    config[section] = { ...(config[section] ?? {}), [key]: value };
    const problems = problemsOf(config);
    expect(problems).toContainEqual(
      expect.stringMatching(new RegExp(`^${path.replace('.', '\\.')}: unknown key; did you mean "${suggestion}"\\?`)),
    );
  });

  it('a typo of a secret key is refused as unknown and as a secret', () => {
    const problems = problemsOf({ ...base(), provider: { name: 'gerege', clientsecret: 'oops' } });
    const line = problems.find((p) => p.startsWith('provider.clientsecret:'));
    expect(line).toContain('did you mean "clientSecret"');
    expect(line).toContain('VENDGATE_PROVIDER_CLIENT_SECRET');
  });

  it('unknown keys deep in a list are named with their index', () => {
    const problems = problemsOf({ device: { id: 'x', catalog: [{ slot: 'A1', name: 'Water', price: 1, prize: 2 }] }, mqtt: { url: '' } });
    expect(problems).toContainEqual(expect.stringMatching(/^device\.catalog\.0\.prize: unknown key; did you mean "price"\?/));
  });

  it('every secret is refused in the file (mqtt.password too), all at once, with the other errors and their paths', () => {
    const config = {
      device: { id: 'strict-test', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }], livemod: true },
      provider: { clientSecret: 'a', apiKey: 'b', webhookSecrets: ['c'] },
      mqtt: { url: '', username: 'u', password: 'd' },
      poll: { intervalMs: 5 },
      fiscal: { webkassa: { token: 'e', password: 'f', apiKey: 'g' } },
      kiosk: { servicePin: '123456' },
    };
    const problems = problemsOf(config);
    for (const secret of SECRET_SETTINGS) {
      expect(problems).toContainEqual(expect.stringContaining(`${secret.path}: secrets are not read from the file; set ${secret.env}`));
    }
    expect(SECRET_SETTINGS.map((s) => s.path)).toEqual(
      expect.arrayContaining([
        'provider.clientSecret',
        'provider.apiKey',
        'provider.webhookSecrets',
        'mqtt.password',
        'fiscal.webkassa.token',
        'fiscal.webkassa.password',
        'fiscal.webkassa.apiKey',
      ]),
    );
    expect(problems).toContainEqual(expect.stringMatching(/^device\.livemod: unknown key/));
    expect(problems).toContainEqual(expect.stringMatching(/^poll\.intervalMs: /));
    // No secret value is ever repeated in a message.
    expect(problems.join('\n')).not.toMatch(/: (a|b|c|d|e|f|g)$/m);
  });

  it('the secrets still come from the environment', () => {
    const path = join(dir.path, 'env.yaml');
    writeFileSync(path, stringify({ ...base(), mqtt: { url: 'mqtt://127.0.0.1:1883', username: 'u' } }));
    const { settings } = loadSettings({ path, env: { VENDGATE_MQTT_PASSWORD: 'pw' } });
    expect(settings.mqtt.password).toBe('pw');
  });

  it('a typo in the real command exits 78 with the path, before any database is created', async () => {
    const dbPath = join(dir.path, 'never.db');
    const path = join(dir.path, 'typo.yaml');
    writeFileSync(
      path,
      stringify({ ...base(), storage: { path: dbPath, retentionDay: 7 }, http: { local: { port: 0 }, webhook: { port: 0 } } }),
    );
    const main = new URL('../../dist/main.js', import.meta.url).pathname;
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [main, 'start', '--config', path], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      child.once('exit', (code) => resolve({ code, stderr }));
    });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('storage.retentionDay: unknown key; did you mean "retentionDays"?');
    expect(existsSync(dbPath)).toBe(false);
  }, 120_000);
});
