import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { connect } from 'mqtt';
import { describe, expect, it } from 'vitest';
import { cleanup } from '../helpers/cleanup.js';
import { BROKER, serviceOnBroker } from '../helpers/on-broker.js';
import { tempDir } from '../helpers/temp.js';
import { commandSendArgs } from '../helpers/operator.js';
import { run } from './cli-io.js';

/**
 * `vendgate command send` believes only the device: a third client on the broker that reads the
 * command (the request id is in the envelope) and answers first in the device's name is refused.
 * The compiled service on a real broker (Mosquitto at 127.0.0.1:1883, or MQTT_TEST_URL).
 */
describe("vendgate command send: only the device's signed answer counts", () => {
  const defer = cleanup();

  it('a forged "refund done" from a third client is refused; the device key is printed by device-key; the genuine answer is taken', async () => {
    const dir = defer(tempDir(), (d) => d.cleanup());
    const keyPath = join(dir.path, 'ops.pem');
    const made = await run(['command', 'keygen', '--out', keyPath, '--key-id', 'ops-fa']);
    const publicKey = /publicKey: (\S+)/.exec(made.stdout)![1]!;
    const { svc, watcher, deviceId, base } = await serviceOnBroker(defer, 'fa', { commands: { keys: [{ id: 'ops-fa', publicKey }] } });

    const shown = await run(['command', 'device-key', '--config', svc.configPath]);
    expect(shown.code).toBe(0);
    const deviceKey = new RegExp(`${deviceId}: (\\S+)`).exec(shown.stdout)![1]!;
    // The database the device runs, from its retained state: a command names its order by reference.
    await watcher.until(() => watcher.on(`${base}/state`).length > 0, { what: 'the retained state' });
    const dbId = (JSON.parse(watcher.on(`${base}/state`).at(-1)!.payload) as { dbId: string }).dbId;

    // The forger reads every command and answers at once, "ok", with and without a made-up signature.
    const f = defer(
      connect(BROKER, { protocolVersion: 4, reconnectPeriod: 0, clientId: `forger-${randomBytes(4).toString('hex')}` }),
      (c) => c.end(true),
    );
    f.on('error', () => {});
    f.on('message', (topic, payload) => {
      const { requestId } = JSON.parse((JSON.parse(payload.toString()) as { signed: string }).signed) as { requestId: string };
      const answer = { requestId, ok: true, result: { orderId: 424242, state: 'refunded' } };
      f.publish(`${topic}/result`, JSON.stringify(answer), { qos: 1 });
      f.publish(`${topic}/result`, JSON.stringify({ ...answer, deviceSignature: randomBytes(64).toString('base64') }), { qos: 1 });
    });
    await new Promise<void>((resolve, reject) =>
      f.on('connect', () => f.subscribe(`${base}/cmd/refund`, { qos: 1 }, (err) => (err ? reject(err) : resolve()))),
    );

    const send = (extra: string[] = []) =>
      run([
        ...commandSendArgs('refund', keyPath, 'ops-fa', { order: `${deviceId}-${dbId}-424242-0badf00d` }),
        '--config',
        svc.configPath,
        '--device-key',
        deviceKey,
        '--db-id',
        dbId,
        ...extra,
      ]);

    // The device is away: only the forger answers. Nothing it says is taken for the device's word.
    await svc.kill('SIGTERM');
    const alone = await send(['--timeout-ms', '3000']);
    expect(alone.code).toBe(1);
    expect(alone.stdout).toBe('');
    expect(alone.stderr).toContain('2 answer(s) with this request id were not signed by');

    // The device is back: its own answer (no such order) is the one printed, whatever came first.
    await svc.restart();
    await watcher.until(() => watcher.on(`${base}/status`).some((m) => m.payload === 'online'), { what: 'online again' });
    const answered = await send();
    expect(answered.code).toBe(1);
    expect(JSON.parse(answered.stdout)).toMatchObject({ ok: false, error: { code: 'VG_ERR_ORDER_NOT_FOUND' } });
    expect(answered.stdout).not.toContain('deviceSignature');
  });
});
