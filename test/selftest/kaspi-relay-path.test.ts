import { describe, expect, it } from 'vitest';
import { createSimulator } from '../../src/simulator/index.js';
import { byName, deviceConfig, onCleanup, selftestFor } from './harness.js';
import { KASPI_DEVICE_SECRET, startKaspiRelayFor } from '../helpers/kaspi-relay.js';

/**
 * Kaspi QR: the selftest proves the relay path — this device signs a ping, the relay accepts it as
 * this device and calls Kaspi's health/ping with the operator's access — and says which part broke.
 */
async function stack(options: { whitelist?: string[] } = {}) {
  const sim = createSimulator({ provider: 'kaspi', currency: 'KZT', ...(options.whitelist ? { kaspiWhitelist: options.whitelist } : {}) });
  await sim.start();
  onCleanup(() => sim.stop());
  const deviceId = 'st-kaspi-1';
  const relay = await startKaspiRelayFor(sim, {
    devices: new Map([[deviceId, { deviceToken: sim.info().kaspi!.deviceTokens[0]!, secrets: [KASPI_DEVICE_SECRET] }]]),
  });
  onCleanup(() => relay.stop());
  const device = await deviceConfig({
    device: { id: deviceId, currency: 'KZT' },
    provider: { name: 'kaspi', baseUrl: relay.url },
  });
  return { sim, relay, device };
}

describe('selftest: the Kaspi relay path', () => {
  it('passes when the relay accepts this device and reaches Kaspi, and creates nothing', async () => {
    const { sim, relay, device } = await stack();
    const run = await selftestFor(device.path, { env: { VENDGATE_PROVIDER_CLIENT_SECRET: KASPI_DEVICE_SECRET } });
    const checks = byName(run.report.checks);
    expect(checks.provider).toMatchObject({
      status: 'PASS',
      detail: expect.stringMatching(/relay accepted device st-kaspi-1; Kaspi health\/ping through it: OK/),
    });
    expect(checks['webhook.tunnel']).toBeUndefined();
    expect(sim.records().invoices).toEqual([]);
    expect(sim.records().requests.map((r) => r.path)).toEqual(['/r3/v01/health/ping']);
    expect(relay.relay.stats().calls).toEqual({ 'ping:ok': 1 });
  });

  it("fails naming this device's secret when the relay does not accept it", async () => {
    const { device } = await stack();
    const run = await selftestFor(device.path, { env: { VENDGATE_PROVIDER_CLIENT_SECRET: 'not-this-devices-secret' } });
    expect(byName(run.report.checks).provider).toMatchObject({ status: 'FAIL', hint: expect.stringMatching(/kaspi-devices\.json/) });
  });

  it("fails naming the relay's whitelist and certificate when Kaspi refuses the relay", async () => {
    const { device } = await stack({ whitelist: ['10.1.2.3'] });
    const run = await selftestFor(device.path, { env: { VENDGATE_PROVIDER_CLIENT_SECRET: KASPI_DEVICE_SECRET } });
    expect(byName(run.report.checks).provider).toMatchObject({ status: 'FAIL', hint: expect.stringMatching(/whitelist/) });
  });
});
