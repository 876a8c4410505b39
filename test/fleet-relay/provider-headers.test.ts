import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createRelay } from '../../src/fleet-relay/index.js';
import { parseRelaySettings, RELAY_PROVIDERS, RELAY_UNSIGNED_PROVIDERS } from '../../src/settings/fleet-relay/index.js';
import { providerSchema } from '../../src/settings/sections/provider.js';
import { mqttSchema } from '../../src/settings/sections/mqtt.js';
import { createBrokerWebhookSubscription } from '../../src/mqtt/index.js';
import { createBrokerIngest, createWebhookInbox } from '../../src/channels/webhook/index.js';
import { PROVIDER_WEBHOOKS, type PaymentProvider } from '../../src/payments/index.js';
import { createGeregeProvider, createQpayProvider, createQutpayProvider, signQutpayTestPayload } from '../../src/payments/adapters.js';
import { createSimulator } from '../../src/simulator/index.js';
import { systemClock } from '../../src/util/index.js';
import { testBroker, uniqueId } from '../helpers/broker.js';
import { waitFor } from '../helpers/wait.js';
import { signedGeregeEvent } from '../helpers/gerege-event.js';
import { tempDatabase } from '../mqtt/harness.js';
import { clearRetainedUnder } from '../mqtt/watch.js';

/**
 * One home for each provider's webhook headers (PROVIDER_WEBHOOKS in payments/webhooks.ts): for
 * every provider with webhooks, a real event goes provider → relay → broker → the device's own
 * subscription → the device adapter's own verify → the inbox. A header the relay failed to forward
 * would be refused by the device's verify here. A provider without webhooks (polling only) has no
 * row: the relay serves nothing for it and the settings refuse it in relay.providers.
 */
const SECRET = 'whsec_headers';
const logger = pino({ level: 'silent' });
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

interface Delivery {
  method: 'POST' | 'GET';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** A device of one provider: its real adapter, an open invoice of its own for `reference` where the adapter needs one. */
interface DeviceSide {
  provider: PaymentProvider;
  /** The request the provider would send about `reference`. */
  delivery(reference: string): Delivery;
  /** The inbox row that delivery must make. */
  expectedEventId: (reference: string) => RegExp;
}

/** Every provider with webhooks needs an entry here; the first test fails when one is missing. */
const DEVICES: Record<string, () => Promise<DeviceSide>> = {
  async gerege() {
    const provider = createGeregeProvider(
      { clock: systemClock, logger },
      { baseUrl: 'http://127.0.0.1:9', clientId: 'c', clientSecret: 's', requestTimeoutMs: 100, createDeadlineMs: 1_000 },
    );
    return {
      provider,
      delivery(reference) {
        const event = signedGeregeEvent(SECRET, 'evt_hdr_1', { id: 'pi_hdr_1', object: 'payment_intent', status: 'succeeded', reference });
        return { method: 'POST', url: '/webhooks/gerege', ...event };
      },
      expectedEventId: () => /^evt_hdr_1$/,
    };
  },
  async qutpay() {
    const provider = createQutpayProvider(
      { clock: systemClock, logger },
      { baseUrl: 'http://127.0.0.1:9', apiKey: 'qp_test', currency: 'KZT', requestTimeoutMs: 100, createDeadlineMs: 1_000 },
    );
    return {
      provider,
      delivery(reference) {
        const body = JSON.stringify({
          event: 'invoice.paid',
          created: new Date().toISOString(),
          invoice: { id: 'inv_hdr_1', status: 'paid', externalOrderId: reference, livemode: false },
        });
        return {
          method: 'POST',
          url: '/webhooks/qutpay',
          headers: { 'content-type': 'application/json', 'x-qutpay-signature': signQutpayTestPayload(body, SECRET) },
          body,
        };
      },
      expectedEventId: () => /^inv_hdr_1:/,
    };
  },
  async qpay() {
    // QPay's device verify takes a callback only for an invoice this process made: make one at the simulator.
    const sim = createSimulator({ provider: 'qpay', seed: 3 });
    await sim.start();
    cleanups.push(() => sim.stop());
    const info = sim.info();
    const provider = createQpayProvider(
      { clock: systemClock, logger },
      {
        baseUrl: info.url,
        clientId: info.clientId!,
        clientSecret: info.clientSecret!,
        invoiceCode: info.invoiceCode!,
        invoiceReceiverCode: 'terminal',
        callbackUrl: 'https://relay.example/webhooks/qpay',
        currency: 'MNT',
        livemode: false,
        requestTimeoutMs: 2_000,
        createDeadlineMs: 5_000,
      },
    );
    return {
      provider,
      delivery(reference) {
        // Unsigned, the order named in the URL only, method and body undocumented: a GET with none.
        return { method: 'GET', url: `/webhooks/qpay?ref=${encodeURIComponent(reference)}`, headers: {} };
      },
      expectedEventId: (reference) => new RegExp(`^qpay-hint:${reference}:`),
    };
  },
};

async function relayTo(brokerUrl: string, prefix: string, provider: string) {
  const relay = createRelay(
    parseRelaySettings({
      relay: {
        id: uniqueId('r'),
        port: 0,
        host: '127.0.0.1',
        providers: [provider],
        publishTimeoutMs: 2_000,
        webhookSecrets: RELAY_UNSIGNED_PROVIDERS.includes(provider) ? {} : { [provider]: [SECRET] },
      },
      mqtt: { url: brokerUrl, prefix, reconnectMinMs: 100 },
      log: { level: 'silent' },
    }),
    { logger, lookup: null },
  );
  await relay.start();
  cleanups.push(() => relay.stop());
  return relay;
}

describe('provider webhook headers have one home', () => {
  it('every provider with webhooks is served by the relay and has a delivery here; the unsigned ones are exactly those marked so', () => {
    expect([...RELAY_PROVIDERS].sort()).toEqual(Object.keys(PROVIDER_WEBHOOKS).sort());
    expect(Object.keys(DEVICES).sort()).toEqual(Object.keys(PROVIDER_WEBHOOKS).sort());
    const unsigned = Object.entries(PROVIDER_WEBHOOKS)
      .filter(([, k]) => !k.signed)
      .map(([name]) => name);
    expect([...RELAY_UNSIGNED_PROVIDERS].sort()).toEqual(unsigned.sort());
  });

  it('a provider without webhooks (polling only) is simply absent: no relay route, refused in relay.providers', async () => {
    const names = providerSchema().shape.name.unwrap().options as readonly string[];
    const withoutWebhooks = names.filter((n) => n !== 'sandbox' && !Object.hasOwn(PROVIDER_WEBHOOKS, n));
    for (const name of withoutWebhooks) {
      expect(() => parseRelaySettings({ relay: { providers: [name] }, mqtt: { url: 'mqtt://127.0.0.1:1' } }), name).toThrow();
    }
    const relay = createRelay(
      parseRelaySettings({
        relay: { port: 0, host: '127.0.0.1', providers: ['gerege'], webhookSecrets: { gerege: [SECRET] } },
        mqtt: { url: 'mqtt://127.0.0.1:1', reconnectMinMs: 60_000 },
        log: { level: 'silent' },
      }),
      { logger, lookup: null },
    );
    cleanups.push(() => relay.stop());
    for (const name of [...withoutWebhooks, 'sandbox']) {
      const answer = await relay.inject({
        method: 'POST',
        url: `/webhooks/${name}`,
        headers: { 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(answer.statusCode, name).toBe(404);
    }
  });

  it('no log line shows any provider signature header, by path or by key', () => {
    const { createLogger } = loggerModule;
    const lines: string[] = [];
    const log = createLogger({ destination: { write: (l: string) => lines.push(l) } as never });
    const secret = 'sig-value-that-must-not-appear';
    for (const k of Object.values(PROVIDER_WEBHOOKS)) {
      for (const name of k.secretHeaders) {
        log.info({ headers: { [name]: secret } }, 'by path');
        log.info({ req: { headers: { [name]: secret } } }, 'by req path');
        log.info({ nested: { deep: { [name]: secret } } }, 'by key');
      }
    }
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(secret);
  });

  describe.each(Object.keys(PROVIDER_WEBHOOKS))('%s', (name) => {
    it(
      'an event reaches the device through the relay with the headers its own verify needs, and is stored once',
      { timeout: 30_000 },
      async () => {
        const broker = await testBroker();
        cleanups.push(() => broker.close());
        const prefix = uniqueId('hdr');
        cleanups.push(async () => {
          if (!broker.embedded) await clearRetainedUnder(broker.url, `${prefix}/#`);
        });
        const deviceId = uniqueId('vm');
        const dbId = 'db1a';
        const device = await DEVICES[name]!();
        // The order's reference, as the device makes them (`<device>-<db>-<order>-<nonce>`).
        let reference = `${deviceId}-${dbId}-7-00c0ffee`;
        if (name === 'qpay') {
          const invoice = await device.provider.createInvoice({
            idempotencyKey: `${reference}-pay-1`,
            reference,
            amount: 1500,
            currency: 'MNT',
            description: 'Cola',
            expiresInSec: 120,
            captureMode: 'automatic',
          });
          reference = invoice.reference;
        }
        const { db } = tempDatabase();
        const inbox = createWebhookInbox(db);
        const ingest = createBrokerIngest({
          provider: device.provider,
          inbox,
          clock: systemClock,
          logger,
          secrets: [SECRET],
          toleranceSec: 300,
        });
        const refused: string[] = [];
        const subscription = createBrokerWebhookSubscription(
          {
            clock: systemClock,
            logger,
            deviceId,
            provider: name,
            referencePrefixes: [`${deviceId}-${dbId}-`],
            async ingest(delivery) {
              const outcome = await ingest(delivery);
              if (outcome === 'refused') refused.push(JSON.stringify(delivery.headers));
              return outcome;
            },
          },
          mqttSchema().parse({ url: broker.url, prefix, reconnectMinMs: 100, reconnectMaxMs: 300 }),
        );
        subscription.start();
        cleanups.push(() => subscription.stop());
        const relay = await relayTo(broker.url, prefix, name);
        await waitFor(() => relay.ready() && relay.stats().devices === 1, {
          timeoutMs: 20_000,
          what: 'the relay to read the device route',
        });

        const delivery = device.delivery(reference);
        // A caller-sent copy of the listener's query header is overwritten, never trusted.
        const answer = await relay.inject({
          method: delivery.method,
          url: delivery.url,
          headers: { ...delivery.headers, cookie: 'session=1', 'x-vendgate-callback-query': 'ref=someone-else' },
          ...(delivery.body !== undefined ? { payload: delivery.body } : {}),
        });
        expect(answer.statusCode, answer.body).toBe(200);
        expect(answer.json()).toMatchObject({ device: deviceId });
        const stored = await waitFor(
          () => {
            const rows = db.prepare('SELECT event_id FROM webhook_events').all() as { event_id: string }[];
            return rows.length > 0 ? rows : null;
          },
          { timeoutMs: 10_000, what: 'the event in the device inbox' },
        );
        expect(refused).toEqual([]);
        expect(stored).toHaveLength(1);
        expect(stored[0]!.event_id).toMatch(device.expectedEventId(reference));
      },
    );
  });
});

const loggerModule = await import('../../src/util/logger.js');
