import { describe, expect, it } from 'vitest';
import { cleanup } from '../helpers/cleanup.js';
import { commandResult, restartOnline, serviceOnBroker } from '../helpers/on-broker.js';
import { cli, get, order, orderReaches, pay, query } from '../catalog/helpers.js';
import { OPERATOR, signedPayload } from '../helpers/operator.js';

/**
 * End to end: the compiled service as a child process on a real broker (Mosquitto at
 * 127.0.0.1:1883, or MQTT_TEST_URL), a customer who paid and took the item, and someone on the
 * broker who would like the money back.
 */
describe('money-moving commands on the running service', () => {
  const defer = cleanup();

  async function vendedOrder() {
    const device = await serviceOnBroker(defer, 'sig');
    const { svc } = device;
    const created = await order(svc, 'A1');
    await pay(created.body.payUrl);
    await orderReaches(svc, created.body.orderId, 'vended');
    const send = (payload: string, requestId: string) => commandResult(device, 'refund', payload, requestId);
    return { ...device, orderId: created.body.orderId as number, reference: created.body.reference as string, send };
  }

  it('buy, take the item, refund yourself: an unsigned refund is refused and the order stays vended', async () => {
    const { svc, orderId, send } = await vendedOrder();
    const reply = await send(JSON.stringify({ requestId: 'free-goods', orderId }), 'free-goods');
    expect(reply).toMatchObject({ ok: false, error: { code: 'VG_ERR_COMMAND_UNSIGNED' } });
    expect((await get(`${svc.localUrl}/api/orders/${orderId}`)).state).toBe('vended');
    expect(query(svc, 'SELECT count(*) AS n FROM refunds')).toEqual([{ n: 0 }]);
  });

  it('a signed refund runs once, with its key and request id in the order history and an MQTT event; its replay after a restart never runs', async () => {
    const device = await vendedOrder();
    const { svc, watcher, deviceId, base, orderId, reference, send } = device;
    const payload = signedPayload(deviceId, 'refund', { order: reference }, { requestId: 'refund-1' });
    expect(await send(payload, 'refund-1')).toMatchObject({ ok: true });
    await orderReaches(svc, orderId, 'refunded');
    const event = await watcher.next(`${base}/events`, (m) => JSON.parse(m.payload).type === 'command.handled', 30_000);
    expect(JSON.parse(event.payload)).toMatchObject({ command: 'refund', requestId: 'refund-1', keyId: OPERATOR.keyId, ok: true, orderId });
    const history = query<{ reason: string }>(svc, 'SELECT reason FROM order_history WHERE order_id = ? ORDER BY rowid', orderId);
    expect(history.map((h) => h.reason)).toEqual(
      expect.arrayContaining([
        `refund requested by mqtt (key ${OPERATOR.keyId}, request refund-1)`,
        `command refund request refund-1 key ${OPERATOR.keyId}: done`,
      ]),
    );

    await restartOnline(device);
    const replay = await send(payload, 'refund-1');
    expect(replay).toMatchObject({ ok: true, replay: true });
    expect(query(svc, 'SELECT count(*) AS n FROM refunds WHERE order_id = ?', orderId)).toEqual([{ n: 1 }]);
    const shown = await cli(svc, ['orders', '--json']);
    expect(shown.code).toBe(0);
  });
});
