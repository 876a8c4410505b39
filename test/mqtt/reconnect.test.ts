import { afterEach, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import mqtt from 'mqtt';
import { backoffDelay, clientOptions } from '../../src/mqtt/connection.js';
import { createBrokerWebhookSubscription, createTopics, webhookClientId, type BrokerWebhookSubscription } from '../../src/mqtt/index.js';
import { createRelay } from '../../src/fleet-relay/index.js';
import { mqttSchema } from '../../src/settings/sections/mqtt.js';
import { parseRelaySettings } from '../../src/settings/fleet-relay/index.js';
import { systemClock } from '../../src/util/index.js';
import { aedesBroker, restartableBroker, uniqueId } from '../helpers/broker.js';

import { captureLogger, createDevice } from './harness.js';
import { waitFor } from '../helpers/wait.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function memoryLogger() {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

function subscription(
  url: string,
  deviceId: string,
  prefix: string,
  logger: ReturnType<typeof memoryLogger>['logger'],
  random?: () => number,
) {
  const sub: BrokerWebhookSubscription = createBrokerWebhookSubscription(
    {
      clock: systemClock,
      logger,
      deviceId,
      provider: 'gerege',
      referencePrefixes: [`${deviceId}-ab12cd-`],
      ...(random ? { random } : {}),
      ingest: async () => 'stored',
    },
    mqttSchema().parse({ url, prefix, reconnectMinMs: 200, reconnectMaxMs: 1_000 }),
  );
  cleanups.push(() => sub.stop());
  return sub;
}

describe('device reconnects: full-jitter exponential backoff', () => {
  it('draws each wait uniformly from [0, min(max, min · 2^attempt)]', () => {
    const at = (attempt: number, random: number) => backoffDelay(attempt, 1_000, 60_000, () => random);
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => at(n, 0.5))).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    // Full jitter: the whole window, from 0 (a fleet spreads over it evenly) to just under the ceiling.
    expect(at(3, 0)).toBe(0);
    expect(at(3, 0.999_999)).toBe(7_999);
    expect(at(3, 1)).toBeLessThan(8_000);
    expect(at(500, 0.25)).toBe(15_000);
    // 10,000 devices after one broker restart: every tenth of the window gets about a tenth of them.
    let seed = 7;
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    const buckets = Array.from({ length: 10 }, () => 0);
    for (let i = 0; i < 10_000; i += 1) buckets[Math.floor(backoffDelay(0, 1_000, 60_000, random) / 100)]! += 1;
    for (const count of buckets) expect(count).toBeGreaterThan(850);
  });

  it('after a broker restart the webhook session comes back on the drawn waits, subscribed again', async () => {
    const broker = await restartableBroker();
    cleanups.push(() => broker.stop());
    const prefix = uniqueId('rc');
    const deviceId = uniqueId('vm');
    const log = memoryLogger();
    const sub = subscription(broker.url, deviceId, prefix, log.logger, () => 0.5);
    sub.start();
    await waitFor(() => sub.connected(), { what: 'the first connect' });
    await broker.stop();
    // Waits 100, 200, 400, 500 (0.5 of 200·2^n, capped at 1,000) … while the broker is away.
    await waitFor(() => log.lines.filter((l) => l.retryInMs !== undefined).length >= 5, { what: 'five retries' });
    await broker.start();
    await waitFor(() => sub.connected(), { what: 'connected again' });
    const waits = log.lines.filter((l) => l.retryInMs !== undefined).map((l) => l.retryInMs as number);
    expect(waits.slice(0, 5)).toEqual([100, 200, 400, 500, 500]);
    // aedes kept no session across its restart: a webhook reaches the device only if it subscribed again.
    const relay = await mqtt.connectAsync(broker.url, { clientId: uniqueId('relay'), protocolVersion: 4, clean: true });
    cleanups.push(() => relay.endAsync(true));
    await waitFor(
      async () => {
        await relay.publishAsync(`${prefix}/${deviceId}/webhooks/gerege`, 'not a fleet message', { qos: 1 });
        return sub.stats().received > 0;
      },
      { what: 'a webhook delivered after the restart' },
    );
  });
});

describe('device reconnects: the persistent webhook session', () => {
  /** One device's webhook session, and what the broker saw of it (SUBSCRIBEs, route PUBLISHes). */
  async function deviceOn(broker: Awaited<ReturnType<typeof restartableBroker>>) {
    const prefix = uniqueId('ps');
    const deviceId = uniqueId('vm');
    const clientId = webhookClientId(`${prefix}-${deviceId}`);
    const filter = `${prefix}/${deviceId}/webhooks/+`;
    const routeTopic = `${prefix}/${deviceId}/route`;
    const log = memoryLogger();
    const sub = subscription(broker.url, deviceId, prefix, log.logger);
    const subscribes = () => broker.subscribed.filter((s) => s.clientId === clientId);
    const routes = () => broker.received.filter((p) => p.clientId === clientId && p.topic === routeTopic);
    const connects = () => log.lines.filter((l) => l.msg === 'fleet webhook subscription connected');
    sub.start();
    await waitFor(() => subscribes().length === 1 && routes().length === 1, { what: 'the first SUBSCRIBE and route announcement' });
    expect(subscribes()[0]).toEqual({ topic: filter, qos: 1, clientId });
    expect(routes()[0]).toMatchObject({ retain: true });
    expect(JSON.parse(routes()[0]!.payload)).toMatchObject({ deviceId, providers: ['gerege'] });
    return { prefix, deviceId, clientId, filter, sub, subscribes, routes, connects };
  }

  it('when the broker kept the session (clean: false) it sends neither SUBSCRIBE nor its route again, and still gets webhooks', async () => {
    const broker = await restartableBroker();
    cleanups.push(() => broker.stop());
    const device = await deviceOn(broker);
    // The broker keeps running and drops only this client's socket: aedes keeps its clean: false session.
    expect(broker.drop(device.clientId)).toBe(true);
    await waitFor(() => device.connects().length === 2 && device.sub.connected(), { what: 'the webhook session back' });
    expect(device.connects().map((l) => l.sessionPresent)).toEqual([false, true]);
    // A webhook through the kept subscription. The device PUBACKs it after anything it wrote at
    // connect, and aedes reads a client's next packets only when it has handled the earlier ones:
    // once the ack is in, a SUBSCRIBE or route sent on reconnect would have been seen.
    const relay = await mqtt.connectAsync(broker.url, { clientId: uniqueId('relay'), protocolVersion: 4, clean: true });
    cleanups.push(() => relay.endAsync(true));
    const webhookTopic = `${device.prefix}/${device.deviceId}/webhooks/gerege`;
    await relay.publishAsync(webhookTopic, 'not a fleet message', { qos: 1 });
    await waitFor(() => broker.acked.some((a) => a.clientId === device.clientId && a.topic === webhookTopic), {
      what: 'the webhook acknowledged by the device',
    });
    expect(device.sub.stats().received).toBe(1);
    expect(device.subscribes()).toHaveLength(1);
    expect(device.routes()).toHaveLength(1);
  });

  it('when the broker lost the session (a fresh broker) it subscribes and announces its route again', async () => {
    const broker = await restartableBroker();
    cleanups.push(() => broker.stop());
    const device = await deviceOn(broker);
    // A restart of restartableBroker is a fresh aedes: no session, no retained route.
    await broker.stop();
    await broker.start();
    await waitFor(() => device.connects().length === 2 && device.sub.connected(), { what: 'the webhook session back' });
    expect(device.connects().map((l) => l.sessionPresent)).toEqual([false, false]);
    await waitFor(() => device.subscribes().length === 2 && device.routes().length === 2, {
      what: 'a second SUBSCRIBE and route announcement',
    });
    expect(device.subscribes()[1]).toEqual({ topic: device.filter, qos: 1, clientId: device.clientId });
    expect(device.routes()[1]).toMatchObject({ retain: true });
    // The fresh broker holds the route again, retained, for a relay that subscribes later.
    const relay = await mqtt.connectAsync(broker.url, { clientId: uniqueId('relay'), protocolVersion: 4, clean: true });
    cleanups.push(() => relay.endAsync(true));
    const retained: string[] = [];
    relay.on('message', (topic, payload, packet) => {
      if (packet.retain) retained.push(payload.toString());
    });
    await relay.subscribeAsync(`${device.prefix}/${device.deviceId}/route`, { qos: 1 });
    await waitFor(() => retained.length === 1, { what: 'the retained route on the fresh broker' });
    expect(JSON.parse(retained[0]!)).toMatchObject({ deviceId: device.deviceId });
  });
});

describe('device reconnects: the monitoring connection', () => {
  it('waits a full-jitter draw within the doubling window, capped, and comes back after a broker restart', async () => {
    const broker = await restartableBroker();
    cleanups.push(() => broker.stop());
    const log = captureLogger();
    // reconnectMinMs 100, reconnectMaxMs 500 (the harness): windows 100, 200, 400, 500, 500, …
    const device = createDevice(broker.url, {}, { logger: log.logger });
    await device.mqtt.start();
    await waitFor(() => device.mqtt.connected(), { what: 'the first connect' });
    await broker.stop();
    const waits = () =>
      log
        .text()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { retryInMs?: number })
        .filter((line) => line.retryInMs !== undefined)
        .map((line) => line.retryInMs!);
    await waitFor(() => waits().length >= 8, { what: 'eight retries while the broker is away' });
    const drawn = waits().slice(0, 8);
    drawn.forEach((ms, attempt) => {
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThan(Math.min(500, 100 * 2 ** attempt));
    });
    // Drawn, not fixed: eight waits of one value would be a fixed period (a herd after a restart).
    expect(new Set(drawn).size).toBeGreaterThan(1);
    await broker.start();
    await waitFor(() => device.mqtt.connected(), { what: 'connected again after the restart' });
  });
});

describe('client ids', () => {
  it("no device's client id equals another device's or a relay's (m1's webhook session vs device m1-webhooks)", async () => {
    const broker = await aedesBroker();
    cleanups.push(broker.close);
    const connected: string[] = [];
    broker.aedes.on('client', (client) => connected.push(client.id));
    const url = broker.url;
    const prefix = 'vendgate';
    const log = memoryLogger();
    subscription(url, 'm1', prefix, log.logger).start();
    const relay = createRelay(
      parseRelaySettings({
        relay: { id: 'r1', port: 0, host: '127.0.0.1', webhookSecrets: { gerege: ['s'] } },
        mqtt: { url, prefix },
        log: { level: 'silent' },
      }),
      { logger: pino({ level: 'silent' }), lookup: null },
    );
    await relay.start();
    cleanups.push(() => relay.stop());
    await waitFor(() => connected.length >= 2, { what: 'the webhook session and the relay connected' });
    const settings = mqttSchema().parse({ url, prefix });
    const monitoring = (deviceId: string) => clientOptions(settings, deviceId, createTopics(prefix, deviceId)).clientId!;
    const ids = [...connected, monitoring('m1'), monitoring('m1-webhooks'), monitoring('relay-r1'), monitoring('r1')];
    expect(new Set(ids).size, ids.join(' ')).toBe(ids.length);
  });
});
