import { testBroker, uniqueId, type TestBroker } from '../helpers/broker.js';
import { watch, clearRetainedUnder, type Watcher } from '../mqtt/watch.js';

/** A device's route announcement, as it publishes it (retained) on `<prefix>/<deviceId>/route`. */
export function routeAnnouncement(deviceId: string, referencePrefixes: string[]): string {
  return JSON.stringify({ v: 1, deviceId, referencePrefixes, providers: ['gerege'], at: new Date().toISOString() });
}

/**
 * A broker for a relay test (the shared one when MQTT_TEST_URL is set), a topic prefix of its own
 * (`label` and a unique tail) and a watcher on the devices' webhook topics. What undoes them goes
 * on `cleanups`: the broker, the watcher, and on a shared broker the retained messages under the prefix.
 */
export async function relayFleet(
  cleanups: (() => Promise<void> | void)[],
  label: string,
): Promise<{ broker: TestBroker; prefix: string; w: Watcher }> {
  const broker = await testBroker();
  cleanups.push(() => broker.close());
  const prefix = uniqueId(label);
  const w = await watch(broker.url, [`${prefix}/+/webhooks/#`]);
  cleanups.push(async () => {
    await w.close();
    if (!broker.embedded) await clearRetainedUnder(broker.url, `${prefix}/#`);
  });
  return { broker, prefix, w };
}
