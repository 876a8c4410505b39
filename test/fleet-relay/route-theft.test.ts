import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { signedGeregeEvent } from '../helpers/gerege-event.js';
import { routeAnnouncement } from './harness.js';
import { decodeWebhookMessage } from '../../src/mqtt/index.js';

import { CA, mqttClient } from '../techniques/e2e/fleet/fleet.js';
import { brokersForFile } from '../techniques/e2e/fleet/brokers-for-file.js';
import { relayProcess, type RelayProcess } from '../techniques/e2e/fleet/relay-process.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Routes no device can steal, and a relay that never answers 2xx for a route it has not read yet:
 * the shipped bridged Mosquittos and ACL, the relay as its own process (`dist/main.js relay`), the
 * devices as plain MQTT clients with their own accounts, webhooks over HTTP as a provider sends them.
 */
const SECRET = 'whsec_route_theft';
const DB = 'ab12cd';
const accounts = { relay: 'pw-relay', bridge: 'pw-bridge', operator: 'pw-operator', m1: 'pw-m1', 'm1-2': 'pw-m1-2' };
const relays: RelayProcess[] = [];

const brokers = brokersForFile('route-theft', accounts, async () => {
  for (const r of relays) await r.kill('SIGTERM');
});
const { clients } = brokers;

async function client(user: keyof typeof accounts, on: 'A' | 'B', id: string) {
  const c = await mqttClient((on === 'A' ? brokers.brokerA : brokers.brokerB).url, user, accounts[user], id);
  clients.push(c);
  const got: { topic: string; payload: Buffer }[] = [];
  c.on('message', (topic, payload) => got.push({ topic, payload }));
  return { client: c, got };
}

async function relay(name: string): Promise<RelayProcess> {
  const r = await relayProcess({
    dir: brokers.dir,
    name,
    config: {
      relay: { providers: ['gerege'], publishTimeoutMs: 5_000 },
      mqtt: { url: brokers.brokerB.url, username: 'relay', caPath: CA, reconnectMinMs: 200 },
      log: { level: 'info' },
    },
    env: { VENDGATE_WEBHOOK_SECRETS: SECRET, VENDGATE_MQTT_PASSWORD: accounts.relay },
  });
  relays.push(r);
  return r;
}

/** POSTs a signed Gerege payment event for `reference`, as the provider does. */
async function webhook(port: number, id: string, reference: string): Promise<{ status: number; body: any }> {
  const event = signedGeregeEvent(SECRET, id, { id: `pi_${id}`, object: 'payment_intent', status: 'succeeded', reference });
  const response = await fetch(`http://127.0.0.1:${port}/webhooks/gerege`, { method: 'POST', headers: event.headers, body: event.body });
  return { status: response.status, body: await response.json() };
}

/** Waits until broker B holds the retained routes of `devices` (they come over the bridge from A). */
async function retainedOnB(devices: string[]): Promise<void> {
  const spy = await client('operator', 'B', `spy-${clients.length}`);
  const seen = new Set<string>();
  spy.client.on('message', (topic) => seen.add(topic.split('/')[1]!));
  // The retained routes follow the subscription, and a route bridged later arrives live.
  await spy.client.subscribeAsync('vendgate/+/route', { qos: 1 });
  await waitFor(() => devices.every((d) => seen.has(d)), {
    timeoutMs: 60_000,
    what: `the retained routes of ${devices.join(', ')} on the relay broker`,
  });
  await spy.client.endAsync(true);
}

describe('relay routes (shipped Mosquitto config and ACL, relay process)', () => {
  it("a device cannot draw another device's webhooks: m1 announcing m1-2's references changes nothing", async () => {
    const m1 = await client('m1', 'A', 'vendgate-m1_webhooks');
    const m12 = await client('m1-2', 'A', 'vendgate-m1-2_webhooks');
    await m1.client.subscribeAsync('vendgate/m1/webhooks/#', { qos: 1 });
    await m12.client.subscribeAsync('vendgate/m1-2/webhooks/#', { qos: 1 });
    // m1-2 announces its own database; m1 claims m1-2's database and a longer prefix of one of its
    // orders (a longest-prefix table gave m1 that order), and tries m1-2's own topic (the ACL drops it).
    await m12.client.publishAsync('vendgate/m1-2/route', routeAnnouncement('m1-2', [`m1-2-${DB}-`]), { qos: 1, retain: true });
    await m1.client.publishAsync('vendgate/m1/route', routeAnnouncement('m1', [`m1-2-${DB}-`, `m1-2-${DB}-5-`, 'm1-2-']), {
      qos: 1,
      retain: true,
    });
    await m1.client.publishAsync('vendgate/m1-2/route', routeAnnouncement('m1-2', [`m1-2-${DB}-5-`]), { qos: 1, retain: true });
    await retainedOnB(['m1', 'm1-2']);

    const r = await relay('relay-theft');
    await r.start();
    // As a provider does: a 503 is retried.
    const answer = await waitFor(
      async () => {
        const a = await webhook(r.port, 'evt_theft_1', `m1-2-${DB}-5-0badf00d`);
        return a.status === 503 ? null : a;
      },
      { what: 'an answer other than 503' },
    );
    expect(answer).toEqual({ status: 200, body: { received: true, device: 'm1-2' } });
    await waitFor(() => m12.got.length > 0, { what: "the webhook at m1-2's subscription" });
    expect(m12.got.map((m) => m.topic)).toEqual(['vendgate/m1-2/webhooks/gerege']);
    expect(decodeWebhookMessage(m12.got[0]!.payload).rawBody.toString()).toContain(`m1-2-${DB}-5-0badf00d`);

    // m1's own orders still reach m1; and m1's claim on "its" database 2 never reaches m1-2's orders.
    await m1.client.publishAsync('vendgate/m1/route', routeAnnouncement('m1', [`m1-${DB}-`]), { qos: 1, retain: true });
    const own = await waitFor(
      async () => {
        const a = await webhook(r.port, 'evt_own_1', `m1-${DB}-9-cafebabe`);
        return a.status === 200 ? a : null;
      },
      { what: "m1's own order routed" },
    );
    expect(own.body.device).toBe('m1');
    await waitFor(() => m1.got.length > 0, { what: "the webhook at m1's subscription" });
    expect(m1.got.map((m) => decodeWebhookMessage(m.payload).rawBody.toString()).join()).not.toContain(`m1-2-${DB}`);
    expect(m12.got).toHaveLength(1);
  });

  it('while it reads a large route backlog it answers 503 (never 2xx) for a device whose route it has not read yet', async () => {
    // 20,000 retained routes on the relay broker (written with the bridge's account, as the bridge does).
    const N = 20_000;
    const writer = await client('bridge', 'B', 'backlog-writer');
    for (let i = 0; i < N; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, N - i) }, (_, k) => {
          const id = `bk-${i + k}`;
          return writer.client.publishAsync(`vendgate/${id}/route`, routeAnnouncement(id, [`${id}-${DB}-`]), { qos: 1, retain: true });
        }),
      );
    }
    const last = `bk-${N - 1}`;
    await retainedOnB([last]);

    const r = await relay('relay-backlog');
    const starting = r.start();
    const answers: number[] = [];
    await waitFor(
      async () => {
        const a = await webhook(r.port, `evt_bk_${answers.length}`, `${last}-${DB}-1-00c0ffee`).catch(() => null);
        if (a) answers.push(a.status);
        return a?.status === 200 ? a : null;
      },
      { timeoutMs: 90_000, what: `a 200 for ${last}` },
    );
    await starting;
    // Until the route was read: 503 (the provider retries). Never 202 ("no such device"): that is a lost webhook.
    expect(answers.filter((s) => s !== 503 && s !== 200)).toEqual([]);
    expect(answers.at(-1)).toBe(200);
    const learned = r.logs().find((l) => l.msg === 'route backlog read: every retained route is known');
    expect(learned).toBeDefined();
  });
});
