import { describe, expect, it } from 'vitest';
import { createManualClock, silentLogger } from '../../src/util/index.js';
import { parseSettings, SettingsError } from '../../src/settings/index.js';
import { createProvider } from '../../src/payments/index.js';

const device = { id: 'vm-001', catalog: [{ slot: 'A1', name: 'Cola', price: 1500 }] };
const deps = { clock: createManualClock(), logger: silentLogger() };

function problems(provider: Record<string, unknown>): string[] {
  try {
    parseSettings({ device, provider });
  } catch (err) {
    expect(err).toBeInstanceOf(SettingsError);
    return (err as SettingsError).problems;
  }
  return [];
}

describe('provider settings', () => {
  it('gerege without credentials lists every missing key with where to set it', () => {
    expect(problems({ name: 'gerege' })).toEqual(
      expect.arrayContaining([
        'provider.baseUrl: required for provider gerege',
        'provider.clientId: required for provider gerege',
        'provider.clientSecret: required for provider gerege: set VENDGATE_PROVIDER_CLIENT_SECRET',
        'provider.webhookSecrets: required for provider gerege: set VENDGATE_WEBHOOK_SECRETS (comma-separated)',
      ]),
    );
  });

  it('qutpay without an API key says which variable to set', () => {
    expect(problems({ name: 'qutpay', baseUrl: 'https://api.qutpay.test', webhookSecrets: ['s'] })).toEqual([
      'provider.apiKey: required for provider qutpay: set VENDGATE_PROVIDER_API_KEY',
    ]);
  });

  it('qutpay refuses manual capture, which it does not have', () => {
    expect(
      problems({ name: 'qutpay', baseUrl: 'https://api.qutpay.test', apiKey: 'qp_test_x', webhookSecrets: ['s'], captureMode: 'manual' }),
    ).toEqual(['provider.captureMode: qutpay has no manual capture: use automatic']);
  });

  it('a base URL that is not http(s) is refused', () => {
    expect(problems({ name: 'qutpay', baseUrl: 'ftp://x', apiKey: 'qp_test_x', webhookSecrets: ['s'] })[0]).toMatch(/^provider\.baseUrl: /);
  });
});

describe('createProvider', () => {
  it('builds the adapter named by provider.name without touching the network', async () => {
    const gerege = parseSettings({
      device,
      provider: { name: 'gerege', baseUrl: 'http://127.0.0.1:9', clientId: 'c', clientSecret: 's', webhookSecrets: ['w'] },
    });
    const qutpay = parseSettings({
      device,
      provider: { name: 'qutpay', baseUrl: 'http://127.0.0.1:9', apiKey: 'qp_test_x', webhookSecrets: ['w'] },
    });
    expect((await createProvider(deps, gerege)).name).toBe('gerege');
    expect((await createProvider(deps, qutpay)).name).toBe('qutpay');
    expect((await createProvider(deps, gerege)).listEvents).toBeTypeOf('function');
  });

  it('leaves the sandbox to the app', async () => {
    await expect(createProvider(deps, parseSettings({ device }))).rejects.toThrow('sandbox provider is built by the app');
  });
});
