import { mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanup } from '../helpers/cleanup.js';
import { commandResult, restartOnline, serviceOnBroker } from '../helpers/on-broker.js';
import { cli, order, orderReaches, pay, query } from '../catalog/helpers.js';
import { commandSendArgs, OPERATOR, signedPayload } from '../helpers/operator.js';

/**
 * A signed refund binds to what cannot repeat: the order's global reference (device, database,
 * order, nonce) and the database the device runs. Captured off the broker and published again
 * after the database was replaced, it refunds nothing, although the new database has an order
 * with the same number, delivered. The compiled service on a real broker (Mosquitto at
 * 127.0.0.1:1883, or MQTT_TEST_URL), the operator's own `vendgate command send`.
 */
describe('a signed refund replayed on a replaced database', () => {
  const defer = cleanup();

  it('is refused and refunds nothing; a local order number is refused too', { timeout: 120_000 }, async () => {
    const device = await serviceOnBroker(defer, 'bind');
    const { svc, watcher, deviceId, base } = device;
    const sell = async () => {
      const created = await order(svc, 'A1');
      await pay(created.body.payUrl);
      await orderReaches(svc, created.body.orderId, 'vended');
      return { orderId: created.body.orderId as number, reference: created.body.reference as string };
    };
    const first = await sell();

    // The operator refunds it with the product's own tool; the envelope goes over the broker.
    const keyPath = join(svc.dir, 'ops.pem');
    writeFileSync(keyPath, OPERATOR.privateKeyPem, { mode: 0o600 });
    const sent = await cli(svc, commandSendArgs('refund', keyPath, OPERATOR.keyId, { order: first.reference }));
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    await orderReaches(svc, first.orderId, 'refunded');
    const captured = watcher.on(`${base}/cmd/refund`).at(-1)!.payload;
    const signedFor = JSON.parse((JSON.parse(captured) as { signed: string }).signed) as { dbId?: string; body: unknown };
    expect(signedFor.body).toEqual({ order: first.reference });
    expect(signedFor.dbId).toBe(first.reference.split('-').at(-3));

    // The card is swapped for an empty database (its files moved aside), and a customer buys again.
    await restartOnline(device, 'SIGTERM', () => {
      const aside = join(svc.dir, 'aside');
      mkdirSync(aside);
      for (const name of readdirSync(dirname(svc.dbPath)).filter((n) => n.startsWith(basename(svc.dbPath))))
        renameSync(join(dirname(svc.dbPath), name), join(aside, name));
    });
    const second = await sell();
    expect(second.orderId).toBe(first.orderId);

    const result = (payload: string, requestId: string) =>
      commandResult<{ ok: boolean; error?: { code: string; message: string } }>(device, 'refund', payload, requestId);
    // The captured envelope, published again: for another database, issued before this one.
    const replay = await result(captured, (JSON.parse(JSON.parse(captured).signed) as { requestId: string }).requestId);
    expect(replay.ok).toBe(false);
    expect(['VG_ERR_COMMAND_OTHER_DATABASE', 'VG_ERR_COMMAND_BEFORE_DATABASE']).toContain(replay.error!.code);
    // A fresh signature on a local order number: the number repeats, so it names nothing.
    const local = await result(
      signedPayload(deviceId, 'refund', { orderId: second.orderId }, { requestId: 'local-number' }),
      'local-number',
    );
    expect(local).toMatchObject({ ok: false, error: { code: 'VG_ERR_BAD_REQUEST' } });

    expect((await orderReaches(svc, second.orderId, 'vended')).state).toBe('vended');
    expect(query(svc, 'SELECT count(*) AS n FROM refunds')).toEqual([{ n: 0 }]);
  });
});
