import { describe, expect, it } from 'vitest';
import { mkdirSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { MqttClient } from 'mqtt';

import { mqttClient } from './fleet/fleet.js';
import type { Mosquitto } from './fleet/mosquitto.js';
import { brokersForFile } from './fleet/brokers-for-file.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * With the shipped queue limits, every device's retained route reaches the relay broker.
 * The bridge is a client of the device broker, and at each bridge connect Mosquitto sends it every
 * retained message of its "out" topics at once; the device broker's `max_queued_messages` (1000
 * before) dropped the overflow without a word, so the relay answered 202 (unknown device) for the
 * routes that never arrived. 3,000 routes is three times that old limit.
 */
const ROUTES = 3_000;
const accounts = { relay: 'pw-relay', bridge: 'pw-bridge', operator: 'pw-operator' };

const brokers = brokersForFile('routes', accounts);
const { clients } = brokers;

const route = (id: string) => JSON.stringify({ v: 1, deviceId: id, referencePrefixes: [`${id}-ab12cd-`], providers: ['gerege'] });

/**
 * The retained routes a relay replica can read on a broker: what arrives before its own backlog
 * marker (subscribed in the same SUBSCRIBE, published after it, as the relay does). A queue overflow
 * drops the marker too: then the count is what came in 20 s.
 */
async function routesOn(broker: Mosquitto): Promise<{ routes: number; markerBack: boolean }> {
  const client = await mqttClient(broker.url, 'relay', accounts.relay, `vendgate_relay_count_${randomBytes(4).toString('hex')}`);
  const marker = `vendgate/_relay/count-${randomBytes(4).toString('hex')}/sync`;
  const nonce = randomBytes(8).toString('hex');
  const seen = new Set<string>();
  try {
    return await new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ routes: seen.size, markerBack: false }), 20_000);
      client.on('message', (topic, payload) => {
        if (topic !== marker) {
          if (payload.length > 0) seen.add(topic);
        } else if (payload.toString() === nonce) {
          clearTimeout(timer);
          resolve({ routes: seen.size, markerBack: true });
        }
      });
      void client
        .subscribeAsync({ 'vendgate/+/route': { qos: 1 }, [marker]: { qos: 1 } })
        .then(() => client.publishAsync(marker, nonce, { qos: 1 }))
        // A count that stopped at its timeout ends the client with its PUBACK still owed.
        .catch(() => {});
    });
  } finally {
    await client.endAsync(true);
  }
}

describe('every route reaches the relay broker (shipped queue limits, real Mosquitto)', () => {
  it(`${ROUTES} retained routes cross the bridge, and come back to a relay broker that lost its disk`, async () => {
    // The bridge account may write any route on the device broker (the ACL lets it carry them):
    // one connection stands in for 3,000 devices announcing.
    const announcer = await mqttClient(brokers.brokerA.url, 'bridge', accounts.bridge, 'announcer');
    clients.push(announcer);
    const ids = Array.from({ length: ROUTES }, (_, i) => `rt-${i}`);
    await Promise.all(ids.map((id) => announcer.publishAsync(`vendgate/${id}/route`, route(id), { qos: 1, retain: true })));

    expect(await routesOn(brokers.brokerA)).toEqual({ routes: ROUTES, markerBack: true });
    const onB = await waitFor(
      async () => {
        const count = await routesOn(brokers.brokerB);
        return count.routes === ROUTES ? count : null;
      },
      { timeoutMs: 60_000, what: `${ROUTES} routes on the relay broker` },
    );
    expect(onB).toEqual({ routes: ROUTES, markerBack: true });

    // The relay broker comes back empty: the device broker's bridge reconnects and sends every
    // retained route again, all at once (the burst the old limit dropped).
    await brokers.brokerB.stop();
    rmSync(join(brokers.dir, 'b', 'data'), { recursive: true, force: true });
    mkdirSync(join(brokers.dir, 'b', 'data'), { recursive: true });
    await brokers.brokerB.start();
    const again = await waitFor(
      async () => {
        const count = await routesOn(brokers.brokerB);
        return count.routes === ROUTES ? count : null;
      },
      { timeoutMs: 60_000, what: `${ROUTES} routes on the relay broker after it lost its disk` },
    );
    expect(again).toEqual({ routes: ROUTES, markerBack: true });
  }, 300_000);
});
