import { describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/store/index.js';
import { broker, createDevice, watching } from './harness.js';
import { retainedNow } from './watch.js';

/** A device on a fresh broker, started after a watcher subscribed to `topics` under its base. */
async function startedDevice(topics: string) {
  const { url } = await broker();
  const device = createDevice(url);
  const watcher = await watching(url, [`${device.base}${topics}`]);
  await device.mqtt.start();
  return { url, device, watcher };
}

describe('presence, state and alarms', () => {
  it('on connect the device publishes status online and its state, both retained for late subscribers', async () => {
    const { url, device, watcher } = await startedDevice('/#');
    await watcher.next(`${device.base}/status`, (m) => m.payload === 'online');
    await watcher.next(`${device.base}/state`);
    expect(device.mqtt.connected()).toBe(true);

    const retained = await retainedNow(url, `${device.base}/#`);
    expect(retained.get(`${device.base}/status`)).toBe('online');
    expect(JSON.parse(retained.get(`${device.base}/state`)!)).toEqual({
      // The database the device runs: what an operator's signed command is bound to.
      dbId: expect.any(String),
      mode: 'vending',
      phase: 'idle',
      orderId: null,
      reference: null,
      since: '2026-11-29T12:00:00.000Z',
    });
  });

  it('state is republished when it changes and not when the app notifies without a change', async () => {
    const { url, device, watcher } = await startedDevice('/state');
    await watcher.next(`${device.base}/state`);
    device.control.notify();
    device.control.notify();
    device.control.setState({ phase: 'awaiting_payment', orderId: 12, reference: 'dev-ab12-12', since: '2026-11-29T12:01:00.000Z' });
    device.control.notify();
    device.control.setState({ phase: 'vending' });
    await watcher.next(`${device.base}/state`, (m) => JSON.parse(m.payload).phase === 'vending');
    expect(watcher.messages.map((m) => JSON.parse(m.payload).phase)).toEqual(['idle', 'awaiting_payment', 'vending']);
    expect(JSON.parse(watcher.messages[1]!.payload)).toMatchObject({ orderId: 12, reference: 'dev-ab12-12' });
  });

  it('a clean stop publishes status offline and state offline, retained', async () => {
    const { url, device, watcher } = await startedDevice('/#');
    await watcher.next(`${device.base}/status`, (m) => m.payload === 'online');
    await device.mqtt.stop();
    await device.mqtt.stop();
    expect(device.mqtt.connected()).toBe(false);

    const retained = await retainedNow(url, `${device.base}/#`);
    expect(retained.get(`${device.base}/status`)).toBe('offline');
    expect(JSON.parse(retained.get(`${device.base}/state`)!)).toMatchObject({ phase: 'offline', orderId: null });
  });

  it('an alarm is retained while it is open and cleared with an empty retained message', async () => {
    const { url, device, watcher } = await startedDevice('/alarms/#');
    const topic = `${device.base}/alarms/vend_uncertain/42`;

    inTransaction(device.db, () => device.outbox.raiseAlarm('vend_uncertain/42', 'critical', 'check the machine', { orderId: 42 }));
    device.mqtt.kick();
    await watcher.next(topic);
    const open = await retainedNow(url, `${device.base}/#`);
    expect(JSON.parse(open.get(topic)!)).toMatchObject({
      name: 'vend_uncertain/42',
      severity: 'critical',
      orderId: 42,
      deviceId: device.deviceId,
    });

    inTransaction(device.db, () => device.outbox.clearAlarm('vend_uncertain/42'));
    device.mqtt.kick();
    await watcher.next(topic, (m) => m.payload === '');
    expect((await retainedNow(url, `${device.base}/#`)).has(topic)).toBe(false);
  });

  it('a selftest report is published retained on selftest, even when it was produced while offline', async () => {
    const { url } = await broker();
    const device = createDevice(url);
    device.mqtt.publishSelftest({ ok: false, failed: ['provider'] });
    const watcher = await watching(url, [`${device.base}/selftest`]);
    await device.mqtt.start();
    const message = await watcher.next(`${device.base}/selftest`);
    expect(JSON.parse(message.payload)).toMatchObject({ report: { ok: false, failed: ['provider'] } });
    expect((await retainedNow(url, `${device.base}/#`)).has(`${device.base}/selftest`)).toBe(true);
  });

  it('Home Assistant discovery announces state, counters and alarms sensors, retained', async () => {
    const { url } = await broker();
    const device = createDevice(url, { homeAssistant: true });
    const discovery = `ha-${device.prefix}`;
    const watcher = await watching(url, [`${discovery}/#`]);
    await device.mqtt.start();
    // The buttons come last: once the last one is here, every config is (counting them raced new ones).
    await watcher.until(() => watcher.messages.some((m) => m.topic === `${discovery}/button/${device.deviceId}_selftest/config`), {
      what: 'the discovery configs',
    });
    const configs = new Map(watcher.messages.map((m) => [m.topic, JSON.parse(m.payload) as Record<string, unknown>]));
    const state = configs.get(`${discovery}/sensor/${device.deviceId}_state/config`);
    expect(state).toMatchObject({
      state_topic: `${device.base}/state`,
      availability_topic: `${device.base}/status`,
      value_template: '{{ value_json.phase }}',
    });
    expect(configs.get(`${discovery}/sensor/${device.deviceId}_alarms/config`)).toMatchObject({ state_topic: `${device.base}/telemetry` });
    expect(configs.get(`${discovery}/sensor/${device.deviceId}_vends_succeeded/config`)).toMatchObject({
      value_template: '{{ value_json.counters.vends_succeeded | default(0) }}',
    });
    expect((await retainedNow(url, `${discovery}/#`)).size).toBe(configs.size);
  });
});
