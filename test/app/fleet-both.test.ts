import { afterEach, describe, expect, it } from 'vitest';
import { connect } from 'mqtt';
import { createSimulator, type Simulator } from '../../src/simulator/index.js';
import { createFleetTopics, encodeWebhookMessage } from '../../src/mqtt/index.js';
import { signGeregeTestPayload } from '../../src/payments/adapters.js';
import { freePort, startService, type Service } from '../helpers/service.js';
import { testBroker, uniqueId, type TestBroker } from '../helpers/broker.js';
import { clearRetainedUnder, watch } from '../mqtt/watch.js';
import { waitFor } from '../helpers/wait.js';
import { query } from '../catalog/helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function serviceWith(
  source: 'both' | 'broker',
  broker: TestBroker,
  prefix: string,
  deviceId: string,
  sim: Simulator,
  webhookPort: number,
): Promise<Service> {
  const info = sim.info();
  const svc = await startService({
    webhookPort,
    config: {
      device: { id: deviceId },
      provider: { name: 'gerege', baseUrl: sim.url, clientId: info.clientId, requestTimeoutMs: 1_000 },
      // Slow polling: the webhook paths are what this test is about.
      poll: { intervalMs: 30_000 },
      http: { webhook: { silenceGraceSec: 600 } },
      mqtt: { url: broker.url, prefix, reconnectMinMs: 100, reconnectMaxMs: 500 },
      fleet: { webhookSource: source },
      log: { level: 'debug' },
    },
    env: { VENDGATE_PROVIDER_CLIENT_SECRET: info.clientSecret!, VENDGATE_WEBHOOK_SECRETS: info.webhookSecret },
  });
  cleanups.push(() => svc.stop());
  return svc;
}

describe('fleet.webhookSource on the real service', () => {
  it('both: the same webhook through the tunnel and through the broker is stored once and vends once', async () => {
    const broker = await testBroker();
    cleanups.push(() => broker.close());
    const prefix = uniqueId('fleet');
    const deviceId = uniqueId('vm');
    if (!broker.embedded) cleanups.push(() => clearRetainedUnder(broker.url, `${prefix}/#`));
    const webhookPort = await freePort();
    const sim = createSimulator({ provider: 'gerege', seed: 3, webhookUrl: `http://127.0.0.1:${webhookPort}/webhooks/gerege` });
    await sim.start();
    cleanups.push(() => sim.stop());
    const routes = await watch(broker.url, [createFleetTopics(prefix).route(deviceId)]);
    cleanups.push(() => routes.close());
    const svc = await serviceWith('both', broker, prefix, deviceId, sim, webhookPort);
    // The device announced the references it owns: <device>-<db>-.
    const route = JSON.parse((await routes.next(createFleetTopics(prefix).route(deviceId))).payload);
    expect(route.referencePrefixes).toHaveLength(1);
    expect(route.referencePrefixes[0]).toMatch(new RegExp(`^${deviceId}-[0-9a-f]+-$`));

    const order = (await fetch(`${svc.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"slot":"A1"}',
    }).then((r) => r.json())) as { orderId: number; invoiceId: string; reference: string };
    expect(order.reference.startsWith(route.referencePrefixes[0])).toBe(true);
    await sim.pay(order.invoiceId);
    await svc.waitFor(() => svc.readSimLog().length === 1, { what: 'the vend' });
    const stored = await waitFor(
      () =>
        query(
          svc,
          "SELECT event_id, raw_body FROM webhook_events WHERE object_id = ? AND type = 'payment_intent.succeeded'",
          order.invoiceId,
        )[0],
      { timeoutMs: 10_000, what: 'the tunnel webhook' },
    );

    // The relay brings the same event (same bytes, signed by the provider) over the broker.
    const relay = connect(broker.url, { clientId: uniqueId('relay'), protocolVersion: 4 });
    relay.on('error', () => {});
    cleanups.push(() => relay.endAsync(true));
    await new Promise<void>((resolve) => relay.once('connect', () => resolve()));
    const t = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'gerege-event-id': stored.event_id,
      'gerege-signature': signGeregeTestPayload(stored.raw_body, sim.info().webhookSecret, t),
    };
    await relay.publishAsync(createFleetTopics(prefix).webhook(deviceId, 'gerege'), encodeWebhookMessage(headers, stored.raw_body), {
      qos: 1,
    });
    await svc.waitFor(
      () => svc.logs().some((l) => l.msg === 'duplicate webhook acknowledged' && l.via === 'broker' && l.eventId === stored.event_id),
      { timeoutMs: 10_000, what: 'the broker copy acknowledged as a duplicate' },
    );
    expect(query(svc, 'SELECT count(*) AS n FROM webhook_events WHERE event_id = ?', stored.event_id)[0]!.n).toBe(1);
    expect(svc.readSimLog()).toHaveLength(1);
  });
});
