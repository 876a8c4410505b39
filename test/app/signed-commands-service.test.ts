import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { watch, type Watcher } from '../mqtt/watch.js';
import { cli, get, order, orderReaches, pay, query } from '../catalog/helpers.js';
import { OPERATOR, signedPayload } from '../helpers/operator.js';

/**
 * End to end: the compiled service as a child process on a real broker (Mosquitto at
 * 127.0.0.1:1883, or MQTT_TEST_URL), a customer who paid and took the item, and someone on the
 * broker who would like the money back.
 */
const BROKER = process.env.MQTT_TEST_URL ?? 'mqtt://127.0.0.1:1883';

describe('money-moving commands on the running service', () => {
  let svc: Service | null = null;
  let watcher: Watcher | null = null;
  afterEach(async () => {
    await svc?.stop();
    svc = null;
    await watcher?.clearRetained();
    await watcher?.close();
    watcher = null;
  });

  async function vendedOrder() {
    const deviceId = `sig-${randomBytes(4).toString('hex')}`;
    const prefix = `vgsig${randomBytes(3).toString('hex')}`;
    const base = `${prefix}/${deviceId}`;
    watcher = await watch(BROKER, [`${base}/#`]);
    svc = await startService({ config: { device: { id: deviceId }, mqtt: { url: BROKER, prefix } } });
    await watcher.next(`${base}/status`, (m) => m.payload === 'online', 30_000);
    const created = await order(svc, 'A1');
    await pay(created.body.payUrl);
    await orderReaches(svc, created.body.orderId, 'vended');
    /** Publishes on cmd/refund and returns the first result after it with this request id. */
    const send = async (payload: string, requestId: string) => {
      const topic = `${base}/cmd/refund/result`;
      const mine = () => watcher!.on(topic).filter((m) => JSON.parse(m.payload).requestId === requestId);
      const before = mine().length;
      await watcher!.publish(`${base}/cmd/refund`, payload);
      await watcher!.until(() => mine().length > before, { what: `the result of ${requestId}` });
      return JSON.parse(mine()[before]!.payload);
    };
    return { deviceId, base, orderId: created.body.orderId as number, reference: created.body.reference as string, send };
  }

  it('buy, take the item, refund yourself: an unsigned refund is refused and the order stays vended', async () => {
    const { orderId, send } = await vendedOrder();
    const reply = await send(JSON.stringify({ requestId: 'free-goods', orderId }), 'free-goods');
    expect(reply).toMatchObject({ ok: false, error: { code: 'VG_ERR_COMMAND_UNSIGNED' } });
    expect((await get(`${svc!.localUrl}/api/orders/${orderId}`)).state).toBe('vended');
    expect(query(svc!, 'SELECT count(*) AS n FROM refunds')).toEqual([{ n: 0 }]);
  });

  it('a signed refund runs once, with its key and request id in the order history and an MQTT event; its replay after a restart never runs', async () => {
    const { deviceId, base, orderId, reference, send } = await vendedOrder();
    const payload = signedPayload(deviceId, 'refund', { order: reference }, { requestId: 'refund-1' });
    expect(await send(payload, 'refund-1')).toMatchObject({ ok: true });
    await orderReaches(svc!, orderId, 'refunded');
    const event = await watcher!.next(`${base}/events`, (m) => JSON.parse(m.payload).type === 'command.handled', 30_000);
    expect(JSON.parse(event.payload)).toMatchObject({ command: 'refund', requestId: 'refund-1', keyId: OPERATOR.keyId, ok: true, orderId });
    const history = query<{ reason: string }>(svc!, 'SELECT reason FROM order_history WHERE order_id = ? ORDER BY rowid', orderId);
    expect(history.map((h) => h.reason)).toEqual(
      expect.arrayContaining([
        `refund requested by mqtt (key ${OPERATOR.keyId}, request refund-1)`,
        `command refund request refund-1 key ${OPERATOR.keyId}: done`,
      ]),
    );

    await svc!.kill('SIGKILL');
    const online = watcher!.on(`${base}/status`).length;
    await svc!.restart();
    await watcher!.until(
      () =>
        watcher!
          .on(`${base}/status`)
          .slice(online)
          .some((m) => m.payload === 'online'),
      { what: 'online again' },
    );
    const replay = await send(payload, 'refund-1');
    expect(replay).toMatchObject({ ok: true, replay: true });
    expect(query(svc!, 'SELECT count(*) AS n FROM refunds WHERE order_id = ?', orderId)).toEqual([{ n: 1 }]);
    const shown = await cli(svc!, ['orders', '--json']);
    expect(shown.code).toBe(0);
  });
});
