import { afterEach, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { startRogueBroker } from '../helpers/rogue-broker.js';
import { cli, order, orderReaches, pay, query } from '../catalog/helpers.js';

/**
 * With `mqtt.url: embedded` and the port already held by another program, the gateway
 * used to connect to it with the operator's password and obey it. Now it runs without MQTT, says
 * so in one line and in the selftest, and never logs in there. The rogue here records every CONNECT
 * and pushes a refund at whoever connects.
 */
describe('the embedded broker fails closed', () => {
  let svc: Service | null = null;
  let rogue: Awaited<ReturnType<typeof startRogueBroker>> | null = null;
  afterEach(async () => {
    await svc?.stop();
    svc = null;
    await rogue?.close();
    rogue = null;
  });

  it('port taken: no login to whatever holds it, one clear line, the selftest says so, sales go on', async () => {
    rogue = await startRogueBroker();
    svc = await startService({
      config: { mqtt: { url: 'embedded', embeddedPort: rogue.port, username: 'operator' } },
      env: { VENDGATE_MQTT_PASSWORD: 'the-operators-password' },
    });
    const line = await svc.waitFor(() => svc!.logs().find((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('MQTT off:')), {
      what: 'the MQTT off line',
    });
    expect(line.msg).toContain(`port 127.0.0.1:${rogue.port} is taken by another program`);
    expect(line.msg).toContain('logs in to no broker it did not start');
    expect(svc.logs().filter((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('MQTT off:'))).toHaveLength(1);

    // A sale goes through without MQTT; a rogue refund pushed meanwhile has nobody to reach.
    const created = await order(svc, 'A1');
    rogue.publish('vendgate/svc-test/cmd/refund', JSON.stringify({ requestId: 'rogue-1', orderId: created.body.orderId }));
    await pay(created.body.payUrl);
    await orderReaches(svc, created.body.orderId, 'vended');

    const selftest = await cli(svc, ['selftest', '--json']);
    const report = JSON.parse(selftest.stdout) as { checks: { name: string; status: string; detail: string }[] };
    const mqtt = report.checks.find((check) => check.name === 'mqtt')!;
    expect(mqtt).toMatchObject({ status: 'FAIL' });
    expect(mqtt.detail).toMatch(/runs without MQTT: .* taken by another program/);

    // Neither the service nor its selftest ever connected to the port's holder.
    expect(rogue.connects).toEqual([]);
    expect(
      svc
        .logs()
        .map((entry) => JSON.stringify(entry))
        .join('\n'),
    ).not.toContain('the-operators-password');
    expect(query(svc, 'SELECT state FROM orders WHERE id = ?', created.body.orderId)).toEqual([{ state: 'vended' }]);
  });
});
