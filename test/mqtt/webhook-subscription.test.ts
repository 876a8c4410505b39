import { describe, expect, it } from 'vitest';
import { connect } from 'mqtt';
import { pino } from 'pino';
import { createBrokerWebhookSubscription, createFleetTopics, encodeWebhookMessage } from '../../src/mqtt/index.js';
import { createBrokerIngest, createWebhookInbox } from '../../src/channels/webhook/index.js';
import { createGeregeProvider } from '../../src/payments/adapters.js';
import { mqttSchema } from '../../src/settings/sections/mqtt.js';
import { systemClock } from '../../src/util/index.js';
import { testBroker, uniqueId } from '../helpers/broker.js';

import { onCleanup, tempDatabase } from './harness.js';
import { clearRetainedUnder, watch } from './watch.js';
import { waitFor } from '../helpers/wait.js';
import { signedGeregeEvent } from '../helpers/gerege-event.js';

const SECRET = 'whsec_device_test';
const logger = pino({ level: 'silent' });

const signed = (id: string, reference: string) => signedGeregeEvent(SECRET, id, { id: `pi_${id}`, status: 'succeeded', reference });

async function setup(options: { failFirst?: number } = {}) {
  const broker = await testBroker();
  onCleanup(() => broker.close());
  const prefix = uniqueId('fleet');
  const deviceId = uniqueId('vm');
  if (!broker.embedded) onCleanup(() => clearRetainedUnder(broker.url, `${prefix}/#`));
  const { db } = tempDatabase();
  const inbox = createWebhookInbox(db);
  const provider = createGeregeProvider(
    { clock: systemClock, logger },
    { baseUrl: 'http://127.0.0.1:9', clientId: 'c', clientSecret: 's', requestTimeoutMs: 100, createDeadlineMs: 1_000 },
  );
  const ingestOnce = createBrokerIngest({ provider, inbox, clock: systemClock, logger, secrets: [SECRET], toleranceSec: 300 });
  let failures = options.failFirst ?? 0;
  const calls: string[] = [];
  const settings = mqttSchema().parse({ url: broker.url, prefix, reconnectMinMs: 100, reconnectMaxMs: 300 });
  const make = () =>
    createBrokerWebhookSubscription(
      {
        clock: systemClock,
        logger,
        deviceId,
        provider: 'gerege',
        referencePrefixes: [`${deviceId}-db1-`],
        async ingest(delivery) {
          calls.push(delivery.headers['gerege-event-id'] ?? '?');
          if (failures > 0) {
            failures -= 1;
            throw new Error('database is locked');
          }
          return ingestOnce(delivery);
        },
      },
      settings,
    );
  const relay = connect(broker.url, { clientId: uniqueId('relay'), protocolVersion: 4, clean: true });
  relay.on('error', () => {});
  onCleanup(() => relay.endAsync(true));
  await new Promise<void>((resolve) => relay.once('connect', () => resolve()));
  const topic = createFleetTopics(prefix).webhook(deviceId, 'gerege');
  const send = (event: { body: string; headers: Record<string, string> }) =>
    relay.publishAsync(topic, encodeWebhookMessage(event.headers, Buffer.from(event.body)), { qos: 1 });
  const sendRaw = (payload: Buffer) => relay.publishAsync(topic, payload, { qos: 1 });
  const rows = () =>
    db.prepare('SELECT event_id, raw_body FROM webhook_events ORDER BY rowid').all() as { event_id: string; raw_body: Buffer }[];
  return { broker, prefix, deviceId, make, send, sendRaw, rows, calls };
}

describe('fleet webhooks, device side', () => {
  it('stores a relayed webhook in the inbox with its exact bytes, once, and refuses a tampered one', async () => {
    const s = await setup();
    const sub = s.make();
    onCleanup(() => sub.stop());
    const routes = await watch(s.broker.url, [createFleetTopics(s.prefix).route(s.deviceId)]);
    onCleanup(() => routes.close());
    sub.start();
    const announced = await routes.next(createFleetTopics(s.prefix).route(s.deviceId));
    expect(JSON.parse(announced.payload)).toMatchObject({
      deviceId: s.deviceId,
      referencePrefixes: [`${s.deviceId}-db1-`],
      providers: ['gerege'],
    });
    // Retained: a relay that subscribes later still learns the route.
    const later = await watch(s.broker.url, [createFleetTopics(s.prefix).route(s.deviceId)]);
    onCleanup(() => later.close());
    expect((await later.next(createFleetTopics(s.prefix).route(s.deviceId))).retain).toBe(true);

    const good = signed('evt_a', `${s.deviceId}-db1-1`);
    const tampered = { ...signed('evt_b', `${s.deviceId}-db1-2`) };
    tampered.body = tampered.body.replace('"livemode":false', '"livemode":true');
    await waitFor(() => sub.connected(), { what: 'the subscription' });
    await s.send(good);
    await s.send(good);
    await s.send(tampered);
    // Not a fleet webhook message at all (no headers line): refused, acknowledged, nothing written.
    await s.sendRaw(Buffer.from(good.body));
    await waitFor(() => sub.stats().received === 4, { what: 'four deliveries' });
    expect(s.rows().map((r) => r.event_id)).toEqual(['evt_a']);
    expect(s.rows()[0]!.raw_body.toString()).toBe(good.body);
    expect(sub.stats()).toMatchObject({ stored: 1, duplicates: 1, refused: 2, notAcknowledged: 0 });
  });

  it('does not acknowledge a webhook whose inbox commit failed: the broker delivers it again', async () => {
    const s = await setup({ failFirst: 1 });
    const sub = s.make();
    onCleanup(() => sub.stop());
    sub.start();
    await waitFor(() => sub.connected(), { what: 'the subscription' });
    await s.send(signed('evt_retry', `${s.deviceId}-db1-1`));
    await waitFor(() => s.rows().length === 1, { what: 'the redelivered webhook stored' });
    expect(s.calls).toEqual(['evt_retry', 'evt_retry']);
    expect(sub.stats().notAcknowledged).toBe(1);
  });

  it('gets what was published while it was offline from its persistent session', async () => {
    const s = await setup();
    const first = s.make();
    first.start();
    await waitFor(() => first.connected(), { what: 'the first session' });
    await first.stop();
    await s.send(signed('evt_offline_1', `${s.deviceId}-db1-1`));
    await s.send(signed('evt_offline_2', `${s.deviceId}-db1-2`));
    const second = s.make();
    onCleanup(() => second.stop());
    second.start();
    await waitFor(() => s.rows().length === 2, { what: 'both webhooks from the session' });
    expect(s.rows().map((r) => r.event_id)).toEqual(['evt_offline_1', 'evt_offline_2']);
  });
});
