import { randomBytes } from 'node:crypto';
import type { Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import { firstFreePort, movePortAdvice } from '../util/free-port.js';
import type { Logger } from '../util/logger.js';
import { recordEmbeddedInstance, recordEmbeddedRefusal, startEmbeddedBroker, type EmbeddedBroker } from './embedded-broker.js';
import type { Topics } from './topics.js';
import type { MqttSettings } from './types.js';

/** Which broker the service logs in to, and as whom. */
export interface BrokerChoice {
  url: string;
  /** The settings with the login the service uses (the embedded broker's own when it made one up). */
  login: MqttSettings;
  /** The embedded broker this process started, or null. */
  embedded: EmbeddedBroker | null;
}

/**
 * `mqtt.url` as given, or with `embedded` a broker of our own on 127.0.0.1:`mqtt.embeddedPort`. It
 * fails closed: a port taken by another program is never logged in to (it would get the operator's
 * password and give commands); the service then runs without MQTT (null), and the refusal is noted
 * in the database for the selftest.
 */
export async function chooseBroker(
  deps: { db: Db; clock: Clock; logger: Logger; topics: Topics },
  settings: MqttSettings,
): Promise<BrokerChoice | null> {
  const { db, clock, logger: log, topics } = deps;
  if (settings.url !== 'embedded') return { url: settings.url, login: settings, embedded: null };
  // The service logs in with mqtt.username/VENDGATE_MQTT_PASSWORD when set (operators use the same
  // login to send commands), else with one made up now; anonymous local clients only read.
  const own =
    settings.username !== undefined && settings.password !== undefined
      ? { username: settings.username, password: settings.password }
      : { username: `vendgate-${randomBytes(4).toString('hex')}`, password: randomBytes(24).toString('base64url') };
  const instance = randomBytes(8).toString('hex');
  let broker: EmbeddedBroker;
  try {
    broker = await startEmbeddedBroker({
      host: '127.0.0.1',
      port: settings.embeddedPort,
      access: { login: own, anonymousMayPublish: (topic) => topic === topics.selftest || topic.startsWith(`${topics.selftest}/`) },
      identity: { topic: topics.broker, payload: instance },
    });
    log.info({ url: broker.url }, 'embedded MQTT broker listening');
  } catch (err) {
    const taken = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
    const reason = taken
      ? `port 127.0.0.1:${settings.embeddedPort} is taken by another program (Mosquitto?)`
      : `the embedded broker could not start (${(err as Error).message})`;
    try {
      recordEmbeddedRefusal(db, { at: new Date(clock.now()).toISOString(), port: settings.embeddedPort, reason });
    } catch (dbErr) {
      log.warn({ err: dbErr }, 'could not note the embedded broker refusal for the selftest');
    }
    const free = taken ? await firstFreePort('127.0.0.1', settings.embeddedPort + 1).catch(() => null) : null;
    log.error(
      { port: settings.embeddedPort, ...(taken ? {} : { err }) },
      `MQTT off: ${reason}: ${movePortAdvice('mqtt.embeddedPort', settings.embeddedPort, free)}, or set mqtt.url to that broker's URL (mqtt://127.0.0.1:${settings.embeddedPort}) with its own login to use it; vendgate logs in to no broker it did not start`,
    );
    return null;
  }
  try {
    recordEmbeddedRefusal(db, null);
    recordEmbeddedInstance(db, { at: new Date(clock.now()).toISOString(), port: broker.port, instance });
  } catch (dbErr) {
    log.warn({ err: dbErr }, 'could not note the embedded broker for the selftest');
  }
  return { url: broker.url, login: { ...settings, ...own }, embedded: broker };
}
