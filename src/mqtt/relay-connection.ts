import { connect as mqttConnect, type MqttClient } from 'mqtt';
import type { Logger } from '../util/logger.js';
import { clientOptions, redactUrl, withTimeout } from './connection.js';
import { createTopics } from './topics.js';
import { createFleetTopics, parseRouteAnnouncement, type RouteAnnouncement } from './fleet-wire.js';
import type { MqttSettings } from './types.js';

export class PublishNotAcknowledged extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PublishNotAcknowledged';
  }
}

export interface RelayConnectionDeps {
  logger: Logger;
  /** Names the client `<prefix>-relay-<replicaId>`: unique per replica, or replicas take each other's session. */
  replicaId: string;
  /** A device announced its route, or withdrew it (null: an empty retained message). */
  onRoute(deviceId: string, route: RouteAnnouncement | null): void;
  /** ms since epoch (injected clock). */
  now(): number;
}

export interface RelayConnection {
  start(): void;
  stop(): Promise<void>;
  connected(): boolean;
  /** True once the route subscription was granted since the last connect (retained routes follow it). */
  routesSubscribed(): boolean;
  /** When the route subscription was first granted in this process (ms), or null: before it, no route is known. */
  firstSubscribedAt(): number | null;
  /** Resolves on the broker's PUBACK; rejects with PublishNotAcknowledged when none comes in time. */
  publish(topic: string, payload: Buffer, timeoutMs: number): Promise<void>;
}

/**
 * The relay's broker connection. Clean session: the relay keeps nothing between connections — the
 * retained route announcements are read again on every connect, and a publish is answered to the
 * provider only once acknowledged, so nothing depends on a session surviving.
 */
export function createRelayConnection(deps: RelayConnectionDeps, settings: MqttSettings): RelayConnection {
  const log = deps.logger.child({ module: 'relay-mqtt' });
  const fleet = createFleetTopics(settings.prefix);
  let client: MqttClient | null = null;
  let isConnected = false;
  let subscribed = false;
  let firstSubscribedAt: number | null = null;
  let stopping: Promise<void> | null = null;

  return {
    start() {
      if (client) return;
      const base = clientOptions(settings, `relay-${deps.replicaId}`, createTopics(settings.prefix, `relay-${deps.replicaId}`));
      const { will: _will, ...rest } = base;
      // mqtt.js reconnects by itself here: the relay has no outbox whose rows a dead client could keep.
      const c = mqttConnect(settings.url, { ...rest, clean: true, reconnectPeriod: settings.reconnectMinMs });
      client = c;
      c.on('connect', () => {
        isConnected = true;
        subscribed = false;
        log.info({ url: redactUrl(settings.url), clientId: rest.clientId }, 'relay connected to the broker');
        c.subscribe(fleet.allRoutes, { qos: 1 }, (err) => {
          if (err) log.error({ err }, 'route subscription refused: check the relay account ACL (read <prefix>/+/route)');
          else {
            subscribed = true;
            firstSubscribedAt ??= deps.now();
          }
        });
      });
      c.on('close', () => {
        if (isConnected) log.warn('relay lost the broker; reconnecting');
        isConnected = false;
        subscribed = false;
      });
      c.on('error', (err) => log.warn({ err }, 'relay broker connection error'));
      c.on('message', (topic, payload) => {
        const deviceId = fleet.routeDevice(topic);
        if (deviceId === null) return;
        const route = parseRouteAnnouncement(deviceId, payload);
        if (route === null && payload.length > 0)
          log.warn({ topic }, 'route announcement ignored: not valid, or it claims references of another device');
        deps.onRoute(deviceId, route);
      });
    },
    async stop() {
      stopping ??= (async () => {
        const c = client;
        isConnected = false;
        if (!c) return;
        if (!(await withTimeout(new Promise<void>((resolve) => c.end(false, {}, () => resolve())), 2_000))) c.end(true);
      })();
      return stopping;
    },
    connected: () => isConnected,
    routesSubscribed: () => subscribed,
    firstSubscribedAt: () => firstSubscribedAt,
    publish(topic, payload, timeoutMs) {
      const c = client;
      if (!c || !isConnected) return Promise.reject(new PublishNotAcknowledged('not connected to the broker'));
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new PublishNotAcknowledged(`no PUBACK within ${timeoutMs} ms`)), timeoutMs);
        c.publish(topic, payload, { qos: 1 }, (err) => {
          clearTimeout(timer);
          if (err) reject(new PublishNotAcknowledged(`publish failed: ${err.message}`));
          else resolve();
        });
      });
    },
  };
}
