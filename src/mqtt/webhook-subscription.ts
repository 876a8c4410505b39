import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { clientOptions, redactUrl } from './connection.js';
import { createReconnectingClient, type ReconnectingClient } from './reconnecting-client.js';
import { createTopics } from './topics.js';
import {
  createFleetTopics,
  decodeWebhookMessage,
  FleetWireError,
  ROUTE_VERSION,
  type ForwardedHeaders,
  type RouteAnnouncement,
} from './fleet-wire.js';
import type { MqttSettings } from './types.js';

/** What the webhook channel did with one broker-delivered webhook. */
export type BrokerIngestOutcome = 'stored' | 'duplicate' | 'refused';

export interface BrokerWebhookDeps {
  clock: Clock;
  logger: Logger;
  deviceId: string;
  /** Order references this device owns start with these (announced, retained, for the relay). */
  referencePrefixes: readonly string[];
  /** The provider this device takes webhooks for. */
  provider: string;
  /** Draws the reconnect delays (tests inject a fixed source). */
  random?: () => number;
  /**
   * Verifies on the raw bytes and stores in the inbox; resolves after the commit. Throws when the
   * event could not be stored (database): the message is then not acknowledged, and comes again.
   */
  ingest(delivery: { provider: string; headers: ForwardedHeaders; rawBody: Buffer }): Promise<BrokerIngestOutcome>;
  /** stop()'s grace for the last acknowledgements (default 2 s, STOP_GRACE_MS; tests shorten it). */
  stopGraceMs?: number;
}

export interface BrokerWebhookSubscription {
  start(): void;
  stop(): Promise<void>;
  connected(): boolean;
  /** Counters for telemetry and tests. */
  stats(): { received: number; stored: number; duplicates: number; refused: number; notAcknowledged: number };
}

/** The webhook session's client id beside the monitoring one (`<prefix>-<device>`). */
export function webhookClientId(monitoringClientId: string): string {
  return `${monitoringClientId}_webhooks`;
}

/**
 * Fleet mode, device side: a persistent MQTT session (its own client id, so the monitoring
 * connection and its outbox are untouched) subscribed to `<prefix>/<device>/webhooks/+`. Each
 * message is verified and committed to the inbox BEFORE mqtt.js sends its PUBACK: mqtt.js sends the
 * PUBACK of a QoS 1 message when `handleMessage`'s callback is called, and processes the next packet
 * only after that, so an event is acknowledged exactly when it is on disk. (`customHandleAcks` would
 * do the same but mqtt.js honours it only with MQTT 5, which aedes and many bridges do not speak.)
 * A failed commit leaves the message unacknowledged and drops the connection: the broker redelivers
 * it from the session on the next connect.
 */
export function createBrokerWebhookSubscription(deps: BrokerWebhookDeps, settings: MqttSettings): BrokerWebhookSubscription {
  const log = deps.logger.child({ module: 'fleet-webhooks' });
  const fleet = createFleetTopics(settings.prefix);
  const filter = `${settings.prefix}/${deps.deviceId}/webhooks/+`;
  const url = settings.url === 'embedded' ? `mqtt://127.0.0.1:${settings.embeddedPort}` : settings.url;
  const counts = { received: 0, stored: 0, duplicates: 0, refused: 0, notAcknowledged: 0 };
  let link: ReconnectingClient | null = null;
  let stopped = false;
  let announced = false;

  function announcement(): string {
    const route: RouteAnnouncement = {
      v: ROUTE_VERSION,
      deviceId: deps.deviceId,
      referencePrefixes: [...deps.referencePrefixes],
      providers: [deps.provider],
      at: new Date(deps.clock.now()).toISOString(),
    };
    return JSON.stringify(route);
  }

  async function handle(c: MqttClient, packet: IPublishPacket): Promise<boolean> {
    const provider = packet.topic.slice(filter.length - 1);
    counts.received += 1;
    let decoded;
    try {
      decoded = decodeWebhookMessage(Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload));
    } catch (err) {
      // Redelivering bytes that cannot be read changes nothing: acknowledge and say so.
      counts.refused += 1;
      log.warn(
        { topic: packet.topic, reason: err instanceof FleetWireError ? err.message : String(err) },
        'broker webhook refused: not a fleet webhook message',
      );
      return true;
    }
    if (provider !== deps.provider) {
      counts.refused += 1;
      log.warn({ topic: packet.topic, provider, expected: deps.provider }, 'broker webhook for another provider refused');
      return true;
    }
    try {
      const outcome = await deps.ingest({ provider, headers: decoded.headers, rawBody: decoded.rawBody });
      if (outcome === 'stored') counts.stored += 1;
      else if (outcome === 'duplicate') counts.duplicates += 1;
      else counts.refused += 1;
      return true;
    } catch (err) {
      counts.notAcknowledged += 1;
      if (link?.isCurrent(c))
        log.error({ err, topic: packet.topic }, 'broker webhook not stored: not acknowledged; the broker redelivers it');
      return false;
    }
  }

  function onConnect(c: MqttClient, sessionPresent: boolean, clientId: string | undefined): void {
    log.info({ url: redactUrl(url), clientId, sessionPresent, filter }, 'fleet webhook subscription connected');
    // A broker that kept the session kept its subscription and (same persistence) the retained
    // route: a fleet coming back after a broker restart sends nothing more than its CONNECTs. A
    // broker that forgot the session gets both again; this process announces once in any case.
    if (sessionPresent && announced) return;
    c.subscribe(filter, { qos: 1 }, (err) => {
      if (err && link?.isCurrent(c)) log.warn({ err }, 'could not subscribe to fleet webhooks');
    });
    c.publish(fleet.route(deps.deviceId), announcement(), { qos: 1, retain: true }, (err) => {
      if (err && link?.isCurrent(c)) log.warn({ err }, 'route announcement not published');
      else if (!err) announced = true;
    });
  }

  /** Called by mqtt.js for each incoming PUBLISH; the PUBACK goes out when `callback` is called. */
  function acknowledgeWhenStored(c: MqttClient): void {
    c.handleMessage = (packet, callback) => {
      if (packet.cmd !== 'publish') {
        callback();
        return;
      }
      // A connection being dropped (or a stop) acknowledges nothing more: the broker keeps the message.
      if (stopped || !link?.isCurrent(c)) return;
      void handle(c, packet as IPublishPacket).then((acknowledge) => {
        if (acknowledge) callback();
        else c.stream?.destroy();
      });
    };
  }

  return {
    start() {
      if (link || stopped) return;
      const base = clientOptions(settings, deps.deviceId, createTopics(settings.prefix, deps.deviceId));
      // The monitoring connection owns the last will (status=offline); this one only carries webhooks.
      // `_` is in no device id, so this id can never be another device's monitoring id
      // (`<prefix>-m1-webhooks` was both m1's webhook client and device m1-webhooks' monitoring one).
      const { will: _will, ...rest } = base;
      const options = { ...rest, clientId: webhookClientId(base.clientId ?? `${settings.prefix}-${deps.deviceId}`) };
      log.info({ url: redactUrl(url), clientId: options.clientId, filter }, 'fleet webhook subscription starting');
      link = createReconnectingClient({
        logger: log,
        url,
        options,
        backoff: { minMs: settings.reconnectMinMs, maxMs: settings.reconnectMaxMs, ...(deps.random ? { random: deps.random } : {}) },
        now: () => deps.clock.now(),
        say: { lost: 'fleet webhook subscription lost; reconnecting', unreachable: 'fleet webhook broker unreachable; retrying' },
        prepare: acknowledgeWhenStored,
        stopGraceMs: deps.stopGraceMs,
        onConnect: (c, sessionPresent) => onConnect(c, sessionPresent, options.clientId),
        onError: (err, attempt) => {
          if (attempt === 0) log.warn({ err, url: redactUrl(url) }, 'fleet webhook subscription error');
        },
      });
      link.start();
    },
    stop() {
      stopped = true;
      return link ? link.stop() : Promise.resolve();
    },
    connected: () => (link?.connectedSince() ?? null) !== null,
    stats: () => ({ ...counts }),
  };
}
