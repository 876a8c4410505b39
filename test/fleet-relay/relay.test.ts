import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createRelay, type Relay } from '../../src/fleet-relay/index.js';
import { parseRelaySettings } from '../../src/settings/fleet-relay/index.js';
import { decodeWebhookMessage, createFleetTopics } from '../../src/mqtt/index.js';
import { ProviderError, type PaymentProvider } from '../../src/payments/index.js';
import { signQutpayTestPayload } from '../../src/payments/adapters.js';
import { aedesBroker, uniqueId } from '../helpers/broker.js';
import { watch, type Watcher } from '../mqtt/watch.js';
import { waitFor } from '../helpers/wait.js';
import { signedGeregeEvent } from '../helpers/gerege-event.js';
import { relayFleet, routeAnnouncement } from './harness.js';

const SECRET = 'whsec_relay_test';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function settingsFor(url: string, prefix: string, extra: Record<string, unknown> = {}) {
  return parseRelaySettings({
    relay: {
      id: uniqueId('r'),
      port: 0,
      host: '127.0.0.1',
      providers: ['gerege', 'qutpay'],
      publishTimeoutMs: 500,
      routesWarmupSec: 0,
      webhookSecrets: { gerege: [SECRET], qutpay: [SECRET] },
      ...extra,
    },
    mqtt: { url, prefix, reconnectMinMs: 100 },
    log: { level: 'silent' },
  });
}

async function startRelay(
  url: string,
  prefix: string,
  lookup: PaymentProvider | null = null,
  extra: Record<string, unknown> = {},
): Promise<Relay> {
  const relay = createRelay(settingsFor(url, prefix, extra), { logger: pino({ level: 'silent' }), lookup });
  await relay.start();
  cleanups.push(() => relay.stop());
  return relay;
}

const geregeEvent = (id: string, object: Record<string, unknown>, type?: string) => signedGeregeEvent(SECRET, id, object, type);

async function announce(w: Watcher, prefix: string, deviceId: string, referencePrefixes: string[]) {
  await w.publish(`${prefix}/${deviceId}/route`, routeAnnouncement(deviceId, referencePrefixes), { retain: true });
}

const fleet = () => relayFleet(cleanups, 'fleet');

describe('vendgate relay', () => {
  it('publishes a verified webhook, raw body and signature headers unchanged, to the device that announced the reference', async () => {
    const { broker, prefix, w } = await fleet();
    await announce(w, prefix, 'vm-1', ['vm-1-aaaa-']);
    await announce(w, prefix, 'vm-1-b', ['vm-1-b-cccc-']);
    const relay = await startRelay(broker.url, prefix);
    await waitFor(() => relay.ready() && relay.stats().devices === 2, { what: 'the relay to read both routes' });

    const event = geregeEvent('evt_1', { id: 'pi_1', object: 'payment_intent', status: 'succeeded', reference: 'vm-1-b-cccc-7' });
    const answer = await relay.inject({
      method: 'POST',
      url: '/webhooks/gerege',
      headers: { ...event.headers, cookie: 'x=1' },
      payload: event.body,
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toEqual({ received: true, device: 'vm-1-b' });
    // 200 came after the PUBACK: the message is on the broker, on the longest matching prefix's topic.
    const message = await w.next(createFleetTopics(prefix).webhook('vm-1-b', 'gerege'));
    const decoded = decodeWebhookMessage(Buffer.from(message.payload));
    expect(decoded.rawBody.toString()).toBe(event.body);
    expect(decoded.headers['gerege-signature']).toBe(event.headers['gerege-signature']);
    expect(decoded.headers['gerege-event-id']).toBe('evt_1');
    expect(decoded.headers.cookie).toBeUndefined();
    expect(w.messages.filter((m) => m.topic.includes('/webhooks/'))).toHaveLength(1);
  });

  it('refuses a bad signature with 400 and publishes nothing', async () => {
    const { broker, prefix, w } = await fleet();
    await announce(w, prefix, 'vm-2', ['vm-2-aaaa-']);
    const relay = await startRelay(broker.url, prefix);
    await waitFor(() => relay.ready() && relay.stats().devices === 1, { what: 'the route' });
    const bad = geregeEvent('evt_bad', { id: 'pi_2', reference: 'vm-2-aaaa-1' });
    const tampered = bad.body.replace('pi_2', 'pi_3');
    const refused = await relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: bad.headers, payload: tampered });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().reason).toBe('bad_signature');
    const unsigned = await relay.inject({
      method: 'POST',
      url: '/webhooks/qutpay',
      headers: { 'content-type': 'application/json' },
      payload: '{"invoice":{"id":"inv_1","status":"paid","externalOrderId":"vm-2-aaaa-1"}}',
    });
    expect(unsigned.statusCode).toBe(400);
    // A good one after them is the FIRST message the device topic sees.
    const good = JSON.stringify({ event: 'invoice.paid', invoice: { id: 'inv_9', status: 'paid', externalOrderId: 'vm-2-aaaa-9' } });
    const ok = await relay.inject({
      method: 'POST',
      url: '/webhooks/qutpay',
      headers: { 'content-type': 'application/json', 'x-qutpay-signature': signQutpayTestPayload(good, SECRET) },
      payload: good,
    });
    expect(ok.statusCode).toBe(200);
    const first = await w.next(createFleetTopics(prefix).webhook('vm-2', 'qutpay'));
    expect(decodeWebhookMessage(Buffer.from(first.payload)).rawBody.toString()).toBe(good);
    expect(w.messages.filter((m) => m.topic.includes('/webhooks/'))).toHaveLength(1);
    expect(relay.stats()).toMatchObject({ refused: 2, published: 1 });
  });

  it("answers 2xx and counts an event for no announced device, and ignores a device claiming another device's references", async () => {
    const { broker, prefix, w } = await fleet();
    await announce(w, prefix, 'vm-3', ['vm-4-aaaa-']);
    const relay = await startRelay(broker.url, prefix);
    await waitFor(() => relay.ready(), { what: 'the relay' });
    const event = geregeEvent('evt_other', { id: 'pi_x', reference: 'vm-4-aaaa-1' });
    const answer = await relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: event.headers, payload: event.body });
    expect(answer.statusCode).toBe(202);
    expect(relay.stats()).toMatchObject({ unrouted: 1, published: 0, devices: 0 });
  });

  it('right after start-up answers an unknown reference with 503, not 202: its route may still be on the way', async () => {
    const { broker, prefix } = await fleet();
    const relay = await startRelay(broker.url, prefix, null, { routesWarmupSec: 600 });
    await waitFor(() => relay.ready(), { what: 'the relay' });
    const event = geregeEvent('evt_early', { id: 'pi_e', reference: 'vm-9-aaaa-1' });
    const answer = await relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: event.headers, payload: event.body });
    expect(answer.statusCode).toBe(503);
    expect(answer.json().reason).toBe('routes_loading');
    expect(relay.stats()).toMatchObject({ unrouted: 0, retryLater: 1 });
  });

  it('until it has read the route backlog it answers an unknown reference 503 (never 202), a known one 200, health 503', async () => {
    // aedes that holds the relay's backlog marker until the test lets it through: the relay is
    // "still reading" for as long as the test wants, whatever the clock says.
    let release: (() => void) | null = null;
    const { url, close } = await aedesBroker({
      authorizePublish: (_client, packet, callback) => {
        if (packet.topic.includes('/_relay/') && release === null) {
          release = () => callback(null);
          return;
        }
        callback(null);
      },
    });
    cleanups.push(close);
    const prefix = uniqueId('fleet');
    const w = await watch(url, [`${prefix}/+/webhooks/#`]);
    cleanups.push(() => w.close());
    await announce(w, prefix, 'vm-7', ['vm-7-aaaa-']);
    const relay = await startRelay(url, prefix);
    await waitFor(() => relay.stats().devices === 1 && release !== null, { what: 'the retained route read, the marker held' });

    const post = async (id: string, reference: string) => {
      const event = geregeEvent(id, { id: `pi_${id}`, reference });
      return relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: event.headers, payload: event.body });
    };
    const unknown = await post('evt_u1', 'vm-8-aaaa-1');
    expect(unknown.statusCode).toBe(503);
    expect(unknown.json().reason).toBe('routes_loading');
    expect((await post('evt_k1', 'vm-7-aaaa-1')).json()).toEqual({ received: true, device: 'vm-7' });
    const health = await relay.inject({ method: 'GET', url: '/webhooks/health' });
    expect(health.statusCode).toBe(503);
    expect(health.json().status).toBe('routes_loading');
    expect(relay.ready()).toBe(false);
    expect(relay.stats()).toMatchObject({ unrouted: 0, retryLater: 1, published: 1 });

    release!();
    await waitFor(() => relay.ready(), { what: 'the backlog read' });
    expect((await relay.inject({ method: 'GET', url: '/webhooks/health' })).statusCode).toBe(200);
    expect((await post('evt_u2', 'vm-8-aaaa-1')).statusCode).toBe(202);
    expect(relay.stats()).toMatchObject({ unrouted: 1 });
  });

  it('routes a refund event by its payment intent with the read-only key, once per intent (cached)', async () => {
    const { broker, prefix, w } = await fleet();
    await announce(w, prefix, 'vm-5', ['vm-5-aaaa-']);
    const reads: string[] = [];
    const lookup = {
      name: 'gerege',
      async getInvoice(id: string) {
        reads.push(id);
        if (id === 'pi_gone') throw new ProviderError('not_found', 'no such intent');
        if (id === 'pi_down') throw new ProviderError('network', 'unreachable');
        return { id, reference: 'vm-5-aaaa-3' };
      },
    } as unknown as PaymentProvider;
    const relay = await startRelay(broker.url, prefix, lookup);
    await waitFor(() => relay.ready() && relay.stats().devices === 1, { what: 'the route' });
    for (const id of ['evt_r1', 'evt_r2']) {
      const refund = geregeEvent(id, { id: `re_${id}`, object: 'refund', payment_intent: 'pi_5', status: 'succeeded' }, 'refund.succeeded');
      const answer = await relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: refund.headers, payload: refund.body });
      expect(answer.json()).toEqual({ received: true, device: 'vm-5' });
    }
    expect(reads).toEqual(['pi_5']);
    const gone = geregeEvent('evt_r3', { id: 're_3', payment_intent: 'pi_gone' }, 'refund.succeeded');
    expect((await relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: gone.headers, payload: gone.body })).statusCode).toBe(
      202,
    );
    const down = geregeEvent('evt_r4', { id: 're_4', payment_intent: 'pi_down' }, 'refund.succeeded');
    expect((await relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: down.headers, payload: down.body })).statusCode).toBe(
      503,
    );
  });

  it('answers 503 when the broker does not acknowledge in time, and when there is no broker', async () => {
    // aedes that never authorises a publish: the PUBLISH is taken, the PUBACK never comes.
    const { url, sockets, close } = await aedesBroker({
      authorizePublish: (_client, packet, callback) => {
        if (packet.topic.includes('/webhooks/')) return;
        callback(null);
      },
    });
    cleanups.push(close);
    const prefix = uniqueId('fleet');
    const w = await watch(url, ['#']);
    cleanups.push(() => w.close());
    await announce(w, prefix, 'vm-6', ['vm-6-aaaa-']);
    const relay = await startRelay(url, prefix);
    await waitFor(() => relay.ready() && relay.stats().devices === 1, { what: 'the route' });
    const event = geregeEvent('evt_6', { id: 'pi_6', reference: 'vm-6-aaaa-1' });
    const answer = await relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: event.headers, payload: event.body });
    expect(answer.statusCode).toBe(503);
    expect(relay.stats().notAcknowledged).toBe(1);

    for (const s of sockets) s.destroy();
    await waitFor(async () => (await relay.inject({ method: 'GET', url: '/webhooks/health' })).statusCode === 503, {
      timeoutMs: 10_000,
      what: 'health to say no broker',
    });
    const noBroker = await relay.inject({ method: 'POST', url: '/webhooks/gerege', headers: event.headers, payload: event.body });
    expect([503]).toContain(noBroker.statusCode);
  });
});
