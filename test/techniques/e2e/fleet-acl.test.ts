import { describe, expect, it } from 'vitest';
import type { MqttClient } from 'mqtt';

import { mqttClient } from './fleet/fleet.js';
import { brokersForFile } from './fleet/brokers-for-file.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * The shipped Mosquitto ACL (config/fleet/mosquitto/fleet.acl) on the shipped bridged brokers: a
 * device reads only its own topics and publishes only its own status/events/route; only the relay
 * publishes webhooks; nobody gets in without an account.
 */
const accounts = { relay: 'pw-relay', bridge: 'pw-bridge', operator: 'pw-operator', 'dev-a': 'pw-a', 'dev-b': 'pw-b' };

const brokers = brokersForFile('acl', accounts);
const { clients } = brokers;

async function as(user: keyof typeof accounts, on: 'A' | 'B'): Promise<{ client: MqttClient; got: { topic: string; payload: string }[] }> {
  const broker = on === 'A' ? brokers.brokerA : brokers.brokerB;
  const client = await mqttClient(broker.url, user, accounts[user], `${user}-${on}-${clients.length}`);
  clients.push(client);
  const got: { topic: string; payload: string }[] = [];
  client.on('message', (topic, payload) => got.push({ topic, payload: payload.toString() }));
  return { client, got };
}

describe('fleet broker ACL (shipped config, real Mosquitto)', () => {
  it('refuses anonymous clients and wrong passwords', async () => {
    await expect(mqttClient(brokers.brokerA.url, 'dev-a', 'wrong', 'x1')).rejects.toThrow(/Not authorized|Bad username or password/i);
    await expect(mqttClient(brokers.brokerB.url, '', '', 'x2')).rejects.toThrow(/Not authorized|Bad username or password|identifier/i);
  });

  it('a device reads only its own webhooks, and only the relay can publish them', async () => {
    const a = await as('dev-a', 'A');
    const b = await as('dev-b', 'A');
    const operator = await as('operator', 'A');
    const relay = await as('relay', 'B');
    await operator.client.subscribeAsync('vendgate/#', { qos: 1 });
    const own = await a.client.subscribeAsync('vendgate/dev-a/webhooks/#', { qos: 1 });
    expect(own[0]!.qos).toBe(1);
    // dev-a also asks for dev-b's webhooks and events. Mosquitto 2.0 grants the subscription and
    // applies the read ACL to every message: nothing of dev-b's may ever arrive.
    await a.client.subscribeAsync(['vendgate/dev-b/webhooks/#', 'vendgate/dev-b/events'], { qos: 1 });
    await b.client.subscribeAsync('vendgate/dev-b/webhooks/#', { qos: 1 });

    // dev-a forges webhooks (for dev-b, and for itself) and another device's route; then a marker it may send.
    await a.client.publishAsync('vendgate/dev-b/webhooks/gerege', 'forged', { qos: 1 });
    await a.client.publishAsync('vendgate/dev-a/webhooks/gerege', 'forged-self', { qos: 1 });
    await a.client.publishAsync('vendgate/dev-b/route', '{"deviceId":"dev-b","referencePrefixes":["dev-b-"]}', { qos: 1, retain: true });
    await a.client.publishAsync('vendgate/dev-a/events', 'marker', { qos: 1 });
    // The relay publishes on its broker; the bridge brings it to dev-b on the device broker.
    await relay.client.publishAsync('vendgate/dev-b/webhooks/gerege', 'from-relay', { qos: 1 });
    // The relay may not send commands or speak for a device.
    await relay.client.publishAsync('vendgate/dev-a/cmd/refund', 'relay-command', { qos: 1 });
    await relay.client.publishAsync('vendgate/dev-a/status', 'relay-status', { qos: 1 });

    await b.client.publishAsync('vendgate/dev-b/events', 'b-event', { qos: 1 });
    await waitFor(() => b.got.some((m) => m.payload === 'from-relay'), {
      timeoutMs: 20_000,
      what: "the relay's webhook at dev-b over the bridge",
    });
    await waitFor(() => operator.got.some((m) => m.payload === 'b-event'), { timeoutMs: 20_000, what: "dev-b's own event" });
    await waitFor(() => operator.got.some((m) => m.payload === 'marker'), { timeoutMs: 20_000, what: "dev-a's own event" });
    expect(b.got.map((m) => m.payload)).toEqual(['from-relay']);
    expect(a.got).toEqual([]);
    expect(operator.got.map((m) => m.payload)).not.toContain('forged');
    expect(operator.got.map((m) => m.payload)).not.toContain('relay-command');
    expect(operator.got.map((m) => m.payload)).not.toContain('relay-status');
    expect(operator.got.filter((m) => m.topic === 'vendgate/dev-b/route')).toEqual([]);
  });

  it("a device's route announcement reaches the relay over the bridge, retained", async () => {
    const a = await as('dev-a', 'A');
    await a.client.publishAsync('vendgate/dev-a/route', '{"deviceId":"dev-a","referencePrefixes":["dev-a-x-"]}', { qos: 1, retain: true });
    const relay = await as('relay', 'B');
    await waitFor(
      async () => {
        const late = await as('relay', 'B');
        await late.client.subscribeAsync('vendgate/+/route', { qos: 1 });
        await new Promise((resolve) => setTimeout(resolve, 100));
        return late.got.some((m) => m.topic === 'vendgate/dev-a/route');
      },
      { timeoutMs: 20_000, what: 'the retained route on the relay broker' },
    );
    // The relay may read routes but not write them (it cannot misroute by announcing).
    await relay.client.publishAsync('vendgate/dev-a/route', '{"deviceId":"dev-a","referencePrefixes":["dev-a-evil-"]}', {
      qos: 1,
      retain: true,
    });
    const check = await as('operator', 'B');
    await check.client.subscribeAsync('vendgate/dev-a/route', { qos: 1 });
    await waitFor(() => check.got.length > 0, { what: 'the retained route' });
    expect(check.got.at(-1)!.payload).toContain('dev-a-x-');
  });

  it("a device publishes its own applied catalog (retained) and it crosses the bridge; never another device's", async () => {
    const a = await as('dev-a', 'A');
    await a.client.publishAsync('vendgate/dev-a/catalog', '{"version":"v7"}', { qos: 1, retain: true });
    await a.client.publishAsync('vendgate/dev-b/catalog', '{"version":"forged"}', { qos: 1, retain: true });
    await waitFor(
      async () => {
        const late = await as('operator', 'B');
        await late.client.subscribeAsync('vendgate/+/catalog', { qos: 1 });
        await new Promise((resolve) => setTimeout(resolve, 100));
        return late.got.some((m) => m.topic === 'vendgate/dev-a/catalog' && m.payload.includes('v7'));
      },
      { timeoutMs: 20_000, what: "dev-a's retained catalog on the relay broker" },
    );
    // Both retained topics in one subscription: once dev-a's has arrived, a retained dev-b one would have too.
    const check = await as('operator', 'A');
    await check.client.subscribeAsync(['vendgate/dev-b/catalog', 'vendgate/dev-a/catalog'], { qos: 1 });
    await waitFor(() => check.got.some((m) => m.topic === 'vendgate/dev-a/catalog'), {
      timeoutMs: 20_000,
      what: "dev-a's retained catalog",
    });
    expect(check.got.filter((m) => m.topic === 'vendgate/dev-b/catalog')).toEqual([]);
  });
});
