import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createMqtt } from '../../src/mqtt/index.js';
import { mqttSchema } from '../../src/settings/sections/mqtt.js';
import { createOutbox } from '../../src/outbox/index.js';
import { systemClock } from '../../src/util/index.js';
import { createFakeDeviceControl, fakeOrderReference } from '../fakes/device-control.js';
import { OPERATOR, commandSettings, createOperator, signedPayload } from '../helpers/operator.js';
import { broker, createDevice, onCleanup, watching } from './harness.js';

/**
 * The commands that move money, goods or prices run only when signed by an operator key
 * the device knows, once per request id, for ever. Over a real broker (Mosquitto with
 * MQTT_TEST_URL), with the device's real SQLite record.
 */
async function connectedDevice(overrides: Record<string, unknown> = {}) {
  const { url } = await broker();
  const device = createDevice(url, { allowRemoteVend: true, ...overrides });
  const watcher = await watching(url, [`${device.base}/#`]);
  await device.mqtt.start();
  await watcher.next(`${device.base}/status`, (m) => m.payload === 'online');
  let sent = 0;
  /** Publishes `payload` on cmd/<name> and returns the next result on its topic. */
  const send = async (name: string, payload: string) => {
    const topic = `${device.base}/cmd/${name}/result`;
    const before = watcher.on(topic).length;
    sent += 1;
    await watcher.publish(`${device.base}/cmd/${name}`, payload);
    await watcher.until(() => watcher.on(topic).length > before, { what: `result ${sent} on ${topic}` });
    return JSON.parse(watcher.on(topic)[before]!.payload) as {
      requestId: unknown;
      ok: boolean;
      replay?: boolean;
      result?: any;
      error?: { code: string; message: string; details?: { problems?: string[]; codes?: string[] } };
    };
  };
  return { url, device, watcher, send };
}

function nothingRan(control: ReturnType<typeof createFakeDeviceControl>) {
  expect(control.calls.refund).toEqual([]);
  expect(control.calls.resolve).toEqual([]);
  expect(control.calls.testVend).toEqual([]);
  expect(control.calls.outOfService).toEqual([]);
}

describe('signed operator commands', () => {
  it('every money, goods or price command without a signature is refused with the reason, and nothing runs', async () => {
    const { device, send } = await connectedDevice();
    device.control.paid.add(3);
    device.control.vendUncertain.add(4);
    const unsigned: [string, Record<string, unknown>][] = [
      ['refund', { requestId: 'u-1', order: fakeOrderReference(3) }],
      ['resolve', { requestId: 'u-2', order: fakeOrderReference(4), vended: false }],
      ['test_vend', { requestId: 'u-3', slot: 'A1' }],
      ['out_of_service', { requestId: 'u-4', on: true }],
      ['catalog', { requestId: 'u-5', catalog: { version: 'cheap', items: [{ slot: 'A1', name: 'Water', price: 1 }] } }],
      ['catalog_rollback', { requestId: 'u-6' }],
      ['refill', { requestId: 'u-7', slot: 'A1', count: 10 }],
      ['clear_jam', { requestId: 'u-8', slot: 'A1' }],
    ];
    for (const [name, body] of unsigned) {
      const reply = await send(name, JSON.stringify(body));
      expect(reply, name).toMatchObject({ requestId: body.requestId, ok: false, error: { code: 'VG_ERR_COMMAND_UNSIGNED' } });
      expect(reply.error!.message, name).toContain('nothing done');
    }
    nothingRan(device.control);
    expect(device.control.paid.has(3)).toBe(true);
    // Read-only commands stay unsigned.
    expect(await send('ping', JSON.stringify({ requestId: 'p' }))).toMatchObject({ ok: true });
  });

  it('a signed refund runs once; the audit names its key and request id', async () => {
    const { device, send } = await connectedDevice();
    device.control.paid.add(5);
    const reply = await send('refund', signedPayload(device.deviceId, 'refund', { order: fakeOrderReference(5) }, { requestId: 'ok-1' }));
    expect(reply).toMatchObject({ requestId: 'ok-1', ok: true, result: { orderId: 5 } });
    expect(device.control.calls.refund).toEqual([5]);
    expect(device.control.calls.audit).toContainEqual(
      expect.objectContaining({ command: 'refund', requestId: 'ok-1', keyId: OPERATOR.keyId, ok: true, verified: true, orderId: 5 }),
    );
  });

  it('expired, for another device, under an unknown key, tampered, or on another topic: refused with the reason, nothing runs', async () => {
    const { device, send } = await connectedDevice();
    device.control.paid.add(6);
    const stranger = createOperator('stranger');
    const past = new Date(Date.now() - 7_200_000);
    const valid = signedPayload(device.deviceId, 'refund', { order: fakeOrderReference(6) }, { requestId: 'x-tamper' });
    const tampered = JSON.stringify({
      ...JSON.parse(valid),
      signed: (JSON.parse(valid) as { signed: string }).signed.replace('-6-0badf00d', '-7-0badf00d'),
    });
    const cases: [name: string, payload: string, code: string, words: string][] = [
      [
        'refund',
        signedPayload(device.deviceId, 'refund', { order: fakeOrderReference(6) }, { requestId: 'x-old', issuedAt: past, ttlMs: 60_000 }),
        'VG_ERR_COMMAND_EXPIRED',
        'expired',
      ],
      [
        'refund',
        signedPayload('another-device', 'refund', { order: fakeOrderReference(6) }, { requestId: 'x-dev' }),
        'VG_ERR_COMMAND_OTHER_DEVICE',
        'another-device',
      ],
      [
        'refund',
        signedPayload(device.deviceId, 'refund', { order: fakeOrderReference(6) }, { requestId: 'x-key', operator: stranger }),
        'VG_ERR_COMMAND_UNKNOWN_KEY',
        'stranger',
      ],
      ['refund', tampered, 'VG_ERR_COMMAND_SIGNATURE', 'does not verify'],
      [
        'resolve',
        signedPayload(device.deviceId, 'refund', { order: fakeOrderReference(6) }, { requestId: 'x-topic' }),
        'VG_ERR_COMMAND_OTHER_TOPIC',
        'cmd/resolve',
      ],
    ];
    for (const [name, payload, code, words] of cases) {
      const reply = await send(name, payload);
      expect(reply, code).toMatchObject({ ok: false, error: { code } });
      expect(reply.error!.message, code).toContain(words);
    }
    nothingRan(device.control);
    // Nobody's key vouches for them: counted in memory, no durable record each; one summary at stop.
    expect(device.control.calls.audit).toEqual([]);
    await device.mqtt.stop();
    expect(device.control.calls.unverified).toHaveLength(1);
    expect(device.control.calls.unverified[0]!.total).toBe(cases.length);
  });

  it('a refused envelope lists every problem, not the first', async () => {
    const { device, send } = await connectedDevice();
    const stranger = createOperator('stranger');
    const past = new Date(Date.now() - 7_200_000);
    const reply = await send(
      'refund',
      signedPayload(
        'another-device',
        'refund',
        { order: fakeOrderReference(6) },
        { requestId: 'many', operator: stranger, issuedAt: past, ttlMs: 60_000 },
      ),
    );
    expect(reply.error!.details!.codes).toEqual(
      expect.arrayContaining(['VG_ERR_COMMAND_UNKNOWN_KEY', 'VG_ERR_COMMAND_OTHER_DEVICE', 'VG_ERR_COMMAND_EXPIRED']),
    );
    expect(reply.error!.details!.problems).toHaveLength(3);
  });

  it('a verified command gets one audit record each (signed but unknown or invalid too); unverified ones are only counted', async () => {
    const { device, send } = await connectedDevice();
    const sent: [name: string, payload: string, audit: Record<string, unknown>][] = [
      ['ping', JSON.stringify({ requestId: 'a-ping' }), { requestId: 'a-ping', keyId: null, verified: false, ok: true, code: null }],
      [
        'nope',
        JSON.stringify({ requestId: 'a-nope' }),
        { requestId: 'a-nope', verified: false, ok: false, code: 'VG_ERR_UNKNOWN_COMMAND' },
      ],
      ['ping', 'not json', { requestId: null, verified: false, ok: false, code: 'VG_ERR_BAD_REQUEST' }],
      [
        'ping',
        JSON.stringify({ requestId: 'a-bad', extra: 1 }),
        { requestId: 'a-bad', verified: false, ok: false, code: 'VG_ERR_BAD_REQUEST' },
      ],
      [
        'refund',
        JSON.stringify({ requestId: 'a-uns', order: 3 }),
        { requestId: 'a-uns', verified: false, code: 'VG_ERR_COMMAND_UNSIGNED' },
      ],
      [
        'nope',
        signedPayload(device.deviceId, 'nope', {}, { requestId: 'a-sig-nope' }),
        { requestId: 'a-sig-nope', keyId: OPERATOR.keyId, verified: true, ok: false, code: 'VG_ERR_UNKNOWN_COMMAND' },
      ],
      [
        'refund',
        signedPayload(device.deviceId, 'refund', { order: 3 }, { requestId: 'a-sig-bad' }),
        { requestId: 'a-sig-bad', keyId: OPERATOR.keyId, verified: true, ok: false, code: 'VG_ERR_BAD_REQUEST' },
      ],
    ];
    for (const [name, payload, expected] of sent) {
      const before = device.control.calls.audit.length;
      await send(name, payload);
      if (expected.verified) expect(device.control.calls.audit.at(-1), `${name} ${payload}`).toMatchObject({ command: name, ...expected });
      else expect(device.control.calls.audit, `${name} ${payload}`).toHaveLength(before);
    }
    expect(device.control.calls.audit).toHaveLength(sent.filter(([, , expected]) => expected.verified).length);
    nothingRan(device.control);
    await device.mqtt.stop();
    expect(device.control.calls.unverified).toEqual([
      expect.objectContaining({
        total: 5,
        byCommand: {
          ping: { ok: 1, VG_ERR_BAD_REQUEST: 2 },
          '(unknown)': { VG_ERR_UNKNOWN_COMMAND: 1 },
          refund: { VG_ERR_COMMAND_UNSIGNED: 1 },
        },
      }),
    ]);
  });

  it("a refused envelope also lists its body's problems where the signed text can be read, and nothing runs", async () => {
    const { device, send } = await connectedDevice();
    device.control.paid.add(6);
    const valid = JSON.parse(signedPayload(device.deviceId, 'refund', { order: fakeOrderReference(6) }, { requestId: 'tampered-x' })) as {
      signed: string;
    };
    const tampered = JSON.stringify({ ...valid, signed: valid.signed.replace(`"order":"${fakeOrderReference(6)}"`, '"order":6') });
    const reply = await send('refund', tampered);
    expect(reply).toMatchObject({ ok: false, error: { code: 'VG_ERR_COMMAND_SIGNATURE' } });
    expect(reply.error!.details!.codes).toEqual(['VG_ERR_COMMAND_SIGNATURE', 'VG_ERR_BAD_REQUEST']);
    expect(reply.error!.details!.problems).toHaveLength(2);
    expect(reply.error!.details!.problems![1]).toMatch(/^signed\.body\.order: /);
    expect(reply.error!.message).toContain('nothing done');
    nothingRan(device.control);
  });

  it('a storage fault while recording a signed command answers VG_ERR_STORAGE, runs nothing, and the same command runs once storage works', async () => {
    const { device, send } = await connectedDevice();
    device.control.paid.add(9);
    // The real SQLite file refuses the claim, as a failing card would.
    device.db.exec(`CREATE TRIGGER fail_claims BEFORE INSERT ON command_requests BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END`);
    const payload = signedPayload(device.deviceId, 'refund', { order: fakeOrderReference(9) }, { requestId: 'faulty' });
    const refused = await send('refund', payload);
    expect(refused).toMatchObject({ requestId: 'faulty', ok: false, error: { code: 'VG_ERR_STORAGE' } });
    expect(refused.error!.message).toContain('nothing done');
    expect(device.control.calls.refund).toEqual([]);
    expect(device.control.calls.audit.at(-1)).toMatchObject({ command: 'refund', requestId: 'faulty', ok: false, code: 'VG_ERR_STORAGE' });
    // The process lives on and answers; nothing was recorded, so the same command may run now.
    device.db.exec('DROP TRIGGER fail_claims');
    expect(await send('refund', payload)).toMatchObject({ requestId: 'faulty', ok: true });
    expect(device.control.calls.refund).toEqual([9]);
  });

  it('a replayed command, byte for byte or with a space added, is answered from the record and never runs again', async () => {
    const { device, send } = await connectedDevice();
    const payload = signedPayload(device.deviceId, 'test_vend', { slot: 'A1' }, { requestId: 'once' });
    const first = await send('test_vend', payload);
    expect(first).toMatchObject({ requestId: 'once', ok: true });
    const again = await send('test_vend', payload);
    const spaced = await send('test_vend', ` ${payload.replace('{', '{ ')}`);
    for (const reply of [again, spaced]) {
      expect(reply).toMatchObject({ requestId: 'once', ok: true, replay: true, result: first.result });
    }
    // The same request id under another signed body is refused too.
    const reused = await send('test_vend', signedPayload(device.deviceId, 'test_vend', { slot: 'B2' }, { requestId: 'once' }));
    expect(reused).toMatchObject({ ok: false, error: { code: 'VG_ERR_COMMAND_REPLAYED' } });
    expect(device.control.calls.testVend).toEqual(['A1']);
  });

  it('the record survives the service: a replay after a restart on the same database does not run', async () => {
    const { url, device, watcher, send } = await connectedDevice();
    device.control.paid.add(8);
    const payload = signedPayload(device.deviceId, 'refund', { order: fakeOrderReference(8) }, { requestId: 'across' });
    expect(await send('refund', payload)).toMatchObject({ ok: true });
    await device.mqtt.stop();
    // The next process: a new MQTT service and control on the same SQLite file.
    const control = createFakeDeviceControl();
    control.paid.add(8);
    const settings = mqttSchema().parse({
      url,
      prefix: device.prefix,
      reconnectMinMs: 100,
      reconnectMaxMs: 500,
      telemetryIntervalSec: 3_600,
    });
    const next = createMqtt(
      {
        outbox: createOutbox({ db: device.db, clock: systemClock, deviceId: device.deviceId }),
        clock: systemClock,
        logger: pino({ level: 'silent' }),
        deviceId: device.deviceId,
        control,
        db: device.db,
        commands: commandSettings(),
      },
      settings,
    );
    onCleanup(() => next.stop());
    const online = watcher.on(`${device.base}/status`).length;
    await next.start();
    await watcher.until(
      () =>
        watcher
          .on(`${device.base}/status`)
          .slice(online)
          .some((m) => m.payload === 'online'),
      { what: 'online again' },
    );
    expect(await send('refund', payload)).toMatchObject({ ok: true, replay: true });
    expect(control.calls.refund).toEqual([]);
  });

  it('key rotation: both keys work while both are listed; a key removed from the settings is refused', async () => {
    const old = createOperator('ops-2026-11');
    const fresh = createOperator('ops-2026-12');
    const { url } = await broker();
    // A device trusting the key in use and the one replacing it:
    const rotating = createDevice(url, { allowRemoteVend: true }, { commands: commandSettings(old, fresh) });
    const watcher = await watching(url, [`${rotating.base}/#`]);
    await rotating.mqtt.start();
    await watcher.next(`${rotating.base}/status`, (m) => m.payload === 'online');
    const result = async (requestId: string, operator: typeof old) => {
      await watcher.publish(
        `${rotating.base}/cmd/test_vend`,
        signedPayload(rotating.deviceId, 'test_vend', { slot: 'A1' }, { requestId, operator }),
      );
      return JSON.parse((await watcher.next(`${rotating.base}/cmd/test_vend/result`, (m) => m.payload.includes(requestId))).payload);
    };
    expect(await result('rot-old', old)).toMatchObject({ ok: true });
    expect(await result('rot-new', fresh)).toMatchObject({ ok: true });
    await rotating.mqtt.stop();
    const after = createDevice(url, { allowRemoteVend: true }, { commands: commandSettings(fresh) });
    const watcher2 = await watching(url, [`${after.base}/#`]);
    await after.mqtt.start();
    await watcher2.next(`${after.base}/status`, (m) => m.payload === 'online');
    await watcher2.publish(
      `${after.base}/cmd/test_vend`,
      signedPayload(after.deviceId, 'test_vend', { slot: 'A1' }, { requestId: 'late', operator: old }),
    );
    const refused = JSON.parse((await watcher2.next(`${after.base}/cmd/test_vend/result`)).payload);
    expect(refused).toMatchObject({ ok: false, error: { code: 'VG_ERR_COMMAND_UNKNOWN_KEY' } });
    expect(after.control.calls.testVend).toEqual([]);
    expect(rotating.control.calls.testVend).toEqual(['A1', 'A1']);
  });
});
