import { describe, expect, it } from 'vitest';
import { broker, createDevice, watching } from './harness.js';
import type { Watcher } from './watch.js';
import { commandPayload } from '../helpers/operator.js';
import { fakeOrderReference } from '../fakes/device-control.js';

async function connectedDevice(overrides: Record<string, unknown> = {}) {
  const { url } = await broker();
  const device = createDevice(url, overrides);
  const watcher = await watching(url, [`${device.base}/#`]);
  await device.mqtt.start();
  await watcher.next(`${device.base}/status`, (m) => m.payload === 'online');
  /** Sends a command and waits for the result carrying the same requestId. */
  const command = async (name: string, body: unknown, requestId?: unknown) => {
    const payload =
      typeof body === 'string' ? body : commandPayload(device.deviceId, name, body as { requestId: string } & Record<string, unknown>);
    await watcher.publish(`${device.base}/cmd/${name}`, payload);
    const result = await watcher.next(
      `${device.base}/cmd/${name}/result`,
      (m) => requestId === undefined || JSON.parse(m.payload).requestId === requestId,
    );
    return { ...JSON.parse(result.payload), retain: result.retain } as {
      requestId: unknown;
      ok: boolean;
      result?: any;
      error?: { code: string; message: string };
      retain: boolean;
    };
  };
  return { url, device, watcher, command };
}

function resultsOn(watcher: Watcher, base: string, name: string) {
  return watcher.on(`${base}/cmd/${name}/result`);
}

describe('commands over MQTT', () => {
  it('ping answers on cmd/ping/result with the request id, not retained', async () => {
    const { command } = await connectedDevice();
    const reply = await command('ping', { requestId: 'p-1' }, 'p-1');
    expect(reply).toMatchObject({ requestId: 'p-1', ok: true, result: { pong: true }, retain: false });
  });

  it('remote vend is refused by default and the actuator is never asked', async () => {
    const { device, command } = await connectedDevice();
    const reply = await command('test_vend', { requestId: 'v-1', slot: 'A1' }, 'v-1');
    expect(reply).toMatchObject({ requestId: 'v-1', ok: false, error: { code: 'VG_ERR_REMOTE_VEND_DISABLED' } });
    expect(reply.error!.message).toContain('mqtt.allowRemoteVend');
    expect(device.control.calls.testVend).toEqual([]);
  });

  it('remote vend fires one test actuation when mqtt.allowRemoteVend is true', async () => {
    const { device, command } = await connectedDevice({ allowRemoteVend: true });
    const reply = await command('test_vend', { requestId: 'v-2', slot: 'A1' }, 'v-2');
    expect(reply).toMatchObject({ ok: true, result: { slot: 'A1' } });
    expect(device.control.calls.testVend).toEqual(['A1']);
  });

  it('garbage on a command topic gets an error result and the device keeps answering', async () => {
    const { device, watcher, command } = await connectedDevice();
    const cases: [name: string, body: string, code: string, requestId: unknown][] = [
      ['ping', 'not json {', 'VG_ERR_BAD_REQUEST', null],
      ['ping', '[1,2]', 'VG_ERR_BAD_REQUEST', null],
      ['ping', '"a string"', 'VG_ERR_BAD_REQUEST', null],
      ['ping', '{}', 'VG_ERR_BAD_REQUEST', null],
      ['resolve', commandPayload(device.deviceId, 'resolve', { requestId: 'r-1', order: 7, vended: 'yes' }), 'VG_ERR_BAD_REQUEST', 'r-1'],
      ['refund', commandPayload(device.deviceId, 'refund', { requestId: 'r-2', order: '' }), 'VG_ERR_BAD_REQUEST', 'r-2'],
      ['out_of_service', commandPayload(device.deviceId, 'out_of_service', { requestId: 'r-3', on: 'true' }), 'VG_ERR_BAD_REQUEST', 'r-3'],
      ['ping', JSON.stringify({ requestId: 'r-4', extra: 1 }), 'VG_ERR_BAD_REQUEST', 'r-4'],
      ['reboot', JSON.stringify({ requestId: 'r-5' }), 'VG_ERR_UNKNOWN_COMMAND', 'r-5'],
    ];
    for (const [name, body, code, requestId] of cases) {
      const topic = `${device.base}/cmd/${name}/result`;
      const before = watcher.on(topic).length;
      await watcher.publish(`${device.base}/cmd/${name}`, body);
      await watcher.until(() => watcher.on(topic).length > before, { what: `the result of ${body}` });
      expect(JSON.parse(watcher.on(topic).at(-1)!.payload), body).toMatchObject({ requestId, ok: false, error: { code } });
    }
    expect(device.control.calls.resolve).toEqual([]);
    expect(device.control.calls.refund).toEqual([]);
    expect(device.control.calls.outOfService).toEqual([]);
    expect(await command('ping', { requestId: 'still-here' }, 'still-here')).toMatchObject({ ok: true });
  });

  it('resolve and refund reach the app, and its errors come back with their stable code', async () => {
    const { device, command } = await connectedDevice();
    device.control.vendUncertain.add(7);
    expect(await command('resolve', { requestId: 'a', order: fakeOrderReference(7), vended: true }, 'a')).toMatchObject({
      ok: true,
      result: { orderId: 7, state: 'vended' },
    });
    expect(await command('resolve', { requestId: 'b', order: fakeOrderReference(7), vended: false }, 'b')).toMatchObject({
      ok: false,
      error: { code: 'VG_ERR_ORDER_STATE' },
    });
    expect(await command('refund', { requestId: 'c', order: fakeOrderReference(99) }, 'c')).toMatchObject({
      ok: false,
      error: { code: 'VG_ERR_ORDER_NOT_FOUND', message: 'no paid order 99' },
    });
    expect(device.control.calls.resolve).toEqual([
      { orderId: 7, vended: true },
      { orderId: 7, vended: false },
    ]);
  });

  it('out_of_service switches the device and the retained state follows', async () => {
    const { device, watcher, command } = await connectedDevice();
    const reply = await command('out_of_service', { requestId: 'o-1', on: true, reason: 'cleaning' }, 'o-1');
    expect(reply).toMatchObject({ ok: true, result: { phase: 'out_of_service' } });
    expect(device.control.calls.outOfService).toEqual([{ on: true, reason: 'cleaning' }]);
    await watcher.next(`${device.base}/state`, (m) => JSON.parse(m.payload).phase === 'out_of_service');
  });

  it('selftest runs the app selftest, returns its report and updates the retained selftest topic', async () => {
    const { device, watcher, command } = await connectedDevice();
    const reply = await command('selftest', { requestId: 's-1' }, 's-1');
    expect(reply).toMatchObject({ ok: true, result: { ok: true, report: { checks: [{ name: 'database', ok: true }] } } });
    expect(device.control.calls.selftest).toBe(1);
    const published = await watcher.next(`${device.base}/selftest`);
    expect(JSON.parse(published.payload)).toMatchObject({ report: { checks: [{ name: 'database', ok: true }] } });
  });

  it('a retained command is ignored when the device connects', async () => {
    const { url } = await broker();
    const device = createDevice(url);
    const watcher = await watching(url, [`${device.base}/#`]);
    await watcher.publish(
      `${device.base}/cmd/out_of_service`,
      commandPayload(device.deviceId, 'out_of_service', { requestId: 'stale', on: true }),
      {
        retain: true,
      },
    );
    await device.mqtt.start();
    await watcher.next(`${device.base}/status`, (m) => m.payload === 'online');
    // Commands are handled in arrival order: once this ping is answered the retained one was seen.
    await watcher.publish(`${device.base}/cmd/ping`, JSON.stringify({ requestId: 'sync' }));
    await watcher.next(`${device.base}/cmd/ping/result`);
    expect(device.control.calls.outOfService).toEqual([]);
    expect(watcher.on(`${device.base}/cmd/out_of_service/result`)).toEqual([]);
    await watcher.publish(`${device.base}/cmd/out_of_service`, '', { retain: true });
  });

  it('the same command delivered twice (a QoS 1 redelivery) runs once and is answered twice', async () => {
    const { device, watcher } = await connectedDevice({ allowRemoteVend: true });
    const body = commandPayload(device.deviceId, 'test_vend', { requestId: 'twice', slot: 'B2' });
    await watcher.publish(`${device.base}/cmd/test_vend`, body);
    await watcher.publish(`${device.base}/cmd/test_vend`, body);
    await watcher.until(() => resultsOn(watcher, device.base, 'test_vend').length === 2, { what: 'two results' });
    expect(device.control.calls.testVend).toEqual(['B2']);
  });
});
