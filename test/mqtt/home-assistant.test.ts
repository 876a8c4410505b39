import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { broker, createDevice, watching } from './harness.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** What Home Assistant does with a button's command_template: render `{{ now().timestamp() }}`. */
function press(template: string, at: number): string {
  return template.replace(/\{\{ now\(\)\.timestamp\(\) \}\}/g, String(at));
}

async function discovery(overrides: Record<string, unknown> = {}) {
  const { url } = await broker();
  const device = createDevice(url, { homeAssistant: true, ...overrides });
  const prefix = `ha-${device.prefix}`;
  const watcher = await watching(url, [`${prefix}/#`, `${device.base}/cmd/+/result`]);
  await device.mqtt.start();
  // The buttons come last: once the last one is here, every config is.
  const last = `${prefix}/button/${device.deviceId}_selftest/config`;
  await watcher.until(() => watcher.messages.some((m) => m.topic === last), { what: 'the discovery configs' });
  const configs = new Map(
    watcher.messages
      .filter((m) => m.topic.startsWith(prefix))
      .map((m) => [m.topic.slice(prefix.length + 1), JSON.parse(m.payload) as Record<string, any>]),
  );
  return { url, device, configs, watcher };
}

describe('Home Assistant discovery', () => {
  it('names the release (device sw_version, origin) on every entity', async () => {
    const { configs } = await discovery();
    expect(configs.size).toBeGreaterThan(10);
    for (const [topic, config] of configs) {
      expect(config.device.sw_version, topic).toBe(PACKAGE_VERSION);
      expect(config.origin, topic).toEqual({ name: 'vendgate', sw_version: PACKAGE_VERSION });
    }
  });

  it('has a problem sensor on open alarms, and connectivity sensors for the device and its payment provider', async () => {
    const { device, configs } = await discovery();
    const id = device.deviceId;
    expect(configs.get(`binary_sensor/${id}_problem/config`)).toMatchObject({
      device_class: 'problem',
      state_topic: `${device.base}/telemetry`,
      value_template: expect.stringContaining('openAlarms'),
    });
    expect(configs.get(`binary_sensor/${id}_provider_reachable/config`)).toMatchObject({
      device_class: 'connectivity',
      state_topic: `${device.base}/telemetry`,
      value_template: expect.stringContaining('providerReachable'),
    });
    const online = configs.get(`binary_sensor/${id}_online/config`)!;
    expect(online).toMatchObject({
      device_class: 'connectivity',
      state_topic: `${device.base}/status`,
      payload_on: 'online',
      payload_off: 'offline',
    });
    expect(online.availability_topic).toBeUndefined();
  });

  it('buttons only for the read-only commands; each press is answered, a second one within 10 s from the first run', async () => {
    const { url, device, configs, watcher } = await discovery();
    const buttons = [...configs].filter(([topic]) => topic.startsWith('button/')).map(([, config]) => config);
    expect(buttons.map((b) => b.command_topic.split('/').at(-1)).sort()).toEqual(['ping', 'selftest']);
    const selftest = configs.get(`button/${device.deviceId}_selftest/config`)!;

    const { connectAsync } = await import('mqtt');
    const client = await connectAsync(url, { protocolVersion: 4 });
    const results = () => watcher.messages.filter((m) => m.topic.endsWith('/cmd/selftest/result')).map((m) => JSON.parse(m.payload));
    try {
      for (const n of [0, 1]) {
        await client.publishAsync(selftest.command_topic, press(selftest.command_template, 1_764_000_000 + n));
        await watcher.until(() => results().length === n + 1, { what: `result ${n + 1}` });
      }
    } finally {
      await client.endAsync();
    }
    expect(results().every((r) => r.ok)).toBe(true);
    expect(new Set(results().map((r) => r.requestId)).size).toBe(2);
    // One selftest at a time, and one just finished answers the next press: the checks call the provider.
    expect(device.control.calls.selftest).toBe(1);
    expect(results()[1].result.shared).toBe(true);
  });

  it('no Stop selling or Test vend button, even with mqtt.allowRemoteVend: Home Assistant cannot sign them', async () => {
    const { device, configs } = await discovery({ allowRemoteVend: true });
    for (const name of ['test_vend', 'stop_selling', 'resume_selling']) {
      expect(configs.has(`button/${device.deviceId}_${name}/config`), name).toBe(false);
    }
  });
});
