import { describe, expect, it } from 'vitest';
import { parseSettings } from '../../src/settings/index.js';

describe('settings: provider kaspi', () => {
  const base = {
    device: { id: 'vm-001', currency: 'KZT', catalog: [{ slot: 'A1', name: 'Cola', price: 500 }] },
    provider: { name: 'kaspi', baseUrl: 'https://relay.example.com:8789', clientSecret: 'device-secret-vm-001-0123456789' },
  };

  it('takes the relay URL and the device secret; no webhook secret is asked for', () => {
    expect(parseSettings(base).provider).toMatchObject({ name: 'kaspi', webhookSecrets: [] });
  });

  it('refuses another currency than tenge, polling slower than Kaspi asks, manual capture and a missing secret, each named', () => {
    const bad = () =>
      parseSettings({
        ...base,
        device: { ...base.device, currency: 'MNT' },
        poll: { intervalMs: 10_000 },
        provider: { name: 'kaspi', baseUrl: 'https://relay.example.com:8789', captureMode: 'manual' },
      });
    expect(bad).toThrow(/device\.currency[\s\S]*tenge/);
    expect(bad).toThrow(/poll\.intervalMs/);
    expect(bad).toThrow(/provider\.clientSecret/);
    expect(bad).toThrow(/captureMode/);
  });
});
