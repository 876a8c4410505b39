import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadSettings } from '../../src/settings/index.js';
import { parseSecretsText } from '../../src/settings/credentials.js';
import { cleanup } from '../helpers/cleanup.js';
import { tempDir } from '../helpers/temp.js';
import { runSetup, STARTER, starterDevice } from './setup-device.js';

const REPO = new URL('../../', import.meta.url).pathname;

/**
 * `vendgate setup`, the guided step after `apt install`: the compiled command with its
 * answers on standard input, on a copy of the starter configuration the package writes.
 */
describe('vendgate setup', () => {
  const defer = cleanup();
  const device = (starter?: string) => starterDevice(defer(tempDir(), (d) => d.cleanup()).path, starter);

  /**
   * A setup that goes through (nothing on stderr, status 0): what it printed, both files as it left
   * them, and the secrets and settings the service will read from them.
   */
  function completed(d: ReturnType<typeof device>, answers: string[]) {
    const result = d.setup(answers);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const { config, secrets } = d.files();
    const env = Object.fromEntries(parseSecretsText(secrets));
    return { stdout: result.stdout, config, secrets, env, settings: loadSettings({ path: d.config, env }).settings };
  }

  const GEREGE = [
    'gerege',
    'vm-014',
    'no',
    'https://api.gerege.example',
    'vm-014-test',
    'cs_secret_value_1',
    'whsec_value_1',
    'pay-vm-014.example.com',
    // The operator's broker: none yet.
    'none',
    // The service menu's PIN: none (the menu stays off).
    '',
  ];

  it('from the starter configuration to Gerege: asks, checks, writes both files (comments and other lines kept, secrets 0640), never shows a secret, and names the tunnel, restart and selftest', () => {
    const d = device();
    const before = d.files();
    const done = completed(d, GEREGE);

    const yaml = parse(done.config);
    expect(yaml.provider).toMatchObject({ name: 'gerege', baseUrl: 'https://api.gerege.example', clientId: 'vm-014-test' });
    expect(yaml.device).toMatchObject({ id: 'vm-014', livemode: false, catalog: parse(before.config).device.catalog });
    expect(yaml.http.webhook).toMatchObject({ host: '127.0.0.1', port: 8787, publicUrl: 'https://pay-vm-014.example.com' });
    expect(done.config).toContain('# vendgate — starter configuration for a new device');
    expect(readFileSync(`${d.config}.before-setup`, 'utf8')).toBe(before.config);

    expect(done.env).toEqual({
      VENDGATE_PROVIDER_CLIENT_SECRET: 'cs_secret_value_1',
      VENDGATE_WEBHOOK_SECRETS: 'whsec_value_1',
    });
    expect(done.secrets).toContain('# secrets of this device');
    expect(statSync(d.secrets).mode & 0o777).toBe(0o640);
    expect(statSync(d.config).mode & 0o777).toBe(0o640);

    // What the service will read is a valid Gerege device.
    expect(done.settings.provider).toMatchObject({ name: 'gerege', clientSecret: 'cs_secret_value_1', webhookSecrets: ['whsec_value_1'] });

    for (const secret of ['cs_secret_value_1', 'whsec_value_1']) expect(done.stdout).not.toContain(secret);
    expect(done.stdout).toContain('secrets changed: VENDGATE_PROVIDER_CLIENT_SECRET, VENDGATE_WEBHOOK_SECRETS');
    expect(done.stdout).toMatch(
      /install-pi\.sh --tunnel-only pay-vm-014\.example\.com\n\s+systemctl restart vendgate\n\s+vendgate selftest/,
    );
  });

  it('QPay: client id and secret, invoice code, no webhook secret (its callbacks are unsigned), the callback URL from the tunnel', () => {
    const done = completed(device(), [
      'qpay',
      'vm-015',
      'no',
      'https://merchant-sandbox.qpay.mn',
      'VM_015',
      'qpay_secret_value_1',
      'VM_015_INVOICE',
      'pay-vm-015.example.com',
      // The callback URL: Enter takes the one on the tunnel.
      '',
      // The operator's broker: none yet; the service menu's PIN: none.
      'none',
      '',
    ]);
    expect(parse(done.config).provider).toMatchObject({
      name: 'qpay',
      clientId: 'VM_015',
      invoiceCode: 'VM_015_INVOICE',
      callbackUrl: 'https://pay-vm-015.example.com/webhooks/qpay',
    });
    expect(done.env).toEqual({ VENDGATE_PROVIDER_CLIENT_SECRET: 'qpay_secret_value_1' });
    expect(done.settings.provider).toMatchObject({ name: 'qpay', clientSecret: 'qpay_secret_value_1', webhookSecrets: [] });
    expect(done.stdout).not.toContain('qpay_secret_value_1');
  });

  it("Kaspi QR: the relay's Kaspi URL and this device's secret there; no webhook secret (Kaspi sends none), no device token on the device", () => {
    const done = completed(device(), [
      'kaspi',
      'vm-016',
      'no',
      'https://relay.example.com:8789',
      'kaspi-device-secret-vm-016',
      // No tunnel: Kaspi QR payments are polled.
      'none',
      'none',
      '',
    ]);
    expect(parse(done.config).provider).toMatchObject({ name: 'kaspi', baseUrl: 'https://relay.example.com:8789' });
    expect(parse(done.config).device).toMatchObject({ currency: 'KZT' });
    expect(done.env).toEqual({ VENDGATE_PROVIDER_CLIENT_SECRET: 'kaspi-device-secret-vm-016' });
    expect(done.settings.provider).toMatchObject({ name: 'kaspi', clientSecret: 'kaspi-device-secret-vm-016', webhookSecrets: [] });
    expect(done.stdout).not.toContain('kaspi-device-secret-vm-016');
  });

  it('run again, Enter keeps every answer, the secrets included', () => {
    const d = device();
    expect(d.setup(GEREGE).status).toBe(0);
    const first = d.files();
    const again = completed(d, ['', '', '', '', '', '', '', '', '', '']);
    expect(parse(again.config)).toEqual(parse(first.config));
    expect(again.env).toEqual(Object.fromEntries(parseSecretsText(first.secrets)));
    expect(again.stdout).toContain('secrets changed: none');
  });

  it('a wrong answer (a device id with capitals and a space) says why and changes nothing', () => {
    const d = device();
    const before = d.files();
    const result = d.setup(['gerege', 'VM 14', ...GEREGE.slice(2)]);
    expect(result.status).toBe(64);
    expect(result.stderr).toMatch(/not a device id.*nothing was changed/);
    expect(d.files()).toEqual(before);
    expect(existsSync(`${d.config}.before-setup`)).toBe(false);
  });

  it('answers the service would refuse together (live money over a plaintext broker) name the setting and change nothing', () => {
    const starter = readFileSync(STARTER, 'utf8').replace("url: ''", "url: 'mqtt://broker.lan:1883'");
    const d = device(starter);
    const before = d.files();
    // The broker of the file kept (Enter), with no login.
    const live = [...GEREGE.slice(0, -2), '', 'none', ''];
    live[2] = 'yes';
    const result = d.setup(live);
    expect(result.status).toBe(78);
    expect(result.stderr).toMatch(/nothing was changed:\n\s+mqtt\.url: live mode sends the MQTT login/);
    expect(d.files()).toEqual(before);
    expect(existsSync(`${d.config}.before-setup`)).toBe(false);
  });

  it('the service menu PIN goes to secrets.env only, is kept on Enter, and a PIN too short says why and changes nothing', () => {
    const d = device();
    const done = completed(d, [...GEREGE.slice(0, -1), '731904']);
    expect(done.stdout).not.toContain('731904');
    expect(done.env).toMatchObject({ VENDGATE_SERVICE_PIN: '731904' });
    expect(done.config).not.toContain('731904');
    expect(done.settings.kiosk.servicePin).toBe('731904');
    expect(completed(d, ['', '', '', '', '', '', '', '', '', '']).env).toMatchObject({ VENDGATE_SERVICE_PIN: '731904' });
    const before = d.files();
    const short = d.setup([...GEREGE.slice(0, -1), '1234']);
    expect(short.status).toBe(64);
    expect(short.stderr).toMatch(/6 to 12 digits.*nothing was changed/);
    expect(d.files()).toEqual(before);
  });

  it('input that ends before the last question changes nothing', () => {
    const d = device();
    const before = d.files();
    const result = d.setup(GEREGE.slice(0, 4));
    expect(result.status).toBe(64);
    expect(result.stderr).toContain('the input ended before every question was answered; nothing was changed');
    expect(d.files()).toEqual(before);
  });

  it('refuses to change the demo configuration shipped with the code', () => {
    const demo = join(REPO, 'config/default.yaml');
    const before = readFileSync(demo, 'utf8');
    const result = runSetup(demo, ['']);
    expect(result.status).toBe(64);
    expect(result.stderr).toContain('no device configuration here');
    expect(readFileSync(demo, 'utf8')).toBe(before);
  });
});
