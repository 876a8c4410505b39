import { randomBytes } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import type { Logger } from '../util/logger.js';
import { clientOptions, redactUrl } from './connection.js';
import { createReconnectingClient, type ReconnectingClient } from './reconnecting-client.js';
import { createTopics } from './topics.js';
import {
  createFleetTopics,
  readRouteAnnouncement,
  ROUTE_MAX_BYTES,
  ROUTE_MAX_PREFIXES,
  type RouteAnnouncement,
  type RouteDropReason,
} from './fleet-wire.js';
import type { MqttSettings } from './types.js';

export class PublishNotAcknowledged extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PublishNotAcknowledged';
  }
}

export interface RelayConnectionDeps {
  logger: Logger;
  /** Names the client `<prefix>_relay_<replicaId>`: unique per replica, or replicas take each other's session. */
  replicaId: string;
  /** A device announced its route, or withdrew it (null: an empty retained message). */
  onRoute(deviceId: string, route: RouteAnnouncement | null): void;
  /** An announcement over the size or prefix bound was dropped (then onRoute(deviceId, null) follows). */
  onRouteDropped?(deviceId: string, reason: RouteDropReason, bytes: number): void;
  /** ms since epoch (injected clock). */
  now(): number;
  /** The event loop is given back after this long of route handling (default 10 ms). */
  sliceMs?: number;
  /** stop()'s grace for the last acknowledgements (default 2 s, STOP_GRACE_MS; tests shorten it). */
  stopGraceMs?: number;
}

export interface RelayConnection {
  start(): void;
  stop(): Promise<void>;
  connected(): boolean;
  /** True once the route subscription was granted since the last connect (retained routes follow it). */
  routesSubscribed(): boolean;
  /**
   * True once every retained route the broker held at this connection's subscribe has been handled
   * (the backlog marker came back). Until then an unknown reference may be a route still on its way.
   */
  routesLearned(): boolean;
  /** When the backlog was first read in this process (ms), or null. */
  firstLearnedAt(): number | null;
  /** Resolves on the broker's PUBACK; rejects with PublishNotAcknowledged when none comes in time. */
  publish(topic: string, payload: Buffer, timeoutMs: number): Promise<void>;
}

/** The client id of a relay replica. `_` is in no device id, so no device's client id can equal it. */
export function relayClientId(prefix: string, replicaId: string): string {
  return `${prefix}_relay_${replicaId}`;
}

/** The topic a replica sends its backlog marker to: `_` starts no device id, so no device owns it. */
export function relaySyncTopic(prefix: string, replicaId: string): string {
  return `${prefix}/_relay/${replicaId}/sync`;
}

const MARKER_WARN_MS = 30_000;

/**
 * The relay's broker connection. Clean session: the relay keeps nothing between connections — the
 * retained route announcements are read again on every connect, and a publish is answered to the
 * provider only once acknowledged, so nothing depends on a session surviving.
 *
 * "Learned" is a fact, not a warm-up: after the route subscription is granted the relay publishes a
 * marker (a fresh nonce) to its own sync topic, which it subscribed to in the same SUBSCRIBE. The
 * broker queued every retained route for this client before it received the marker, and delivers a
 * client's messages in order, so when the marker comes back the backlog has been read.
 *
 * The backlog (10,000s of retained messages) is handled in slices: mqtt.js reads the next packet only
 * after `handleMessage`'s callback, so after `sliceMs` of work the callback is deferred with
 * setImmediate and timers, HTTP and the keepalive run between slices.
 */
export function createRelayConnection(deps: RelayConnectionDeps, settings: MqttSettings): RelayConnection {
  const log = deps.logger.child({ module: 'relay-mqtt' });
  const fleet = createFleetTopics(settings.prefix);
  const syncTopic = relaySyncTopic(settings.prefix, deps.replicaId);
  const sliceMs = deps.sliceMs ?? 10;
  let link: ReconnectingClient | null = null;
  const isConnected = () => (link?.connectedSince() ?? null) !== null;
  let subscribed = false;
  let learned = false;
  let marker: string | null = null;
  let markerTimer: NodeJS.Timeout | null = null;
  let firstLearnedAt: number | null = null;
  let sliceStart = 0;

  // One device re-announcing an oversized route in a loop must not fill the journal either.
  const lastDropWarned = new Map<string, number>();
  function dropWarning(deviceId: string, reason: RouteDropReason, bytes: number): void {
    const now = deps.now();
    if (now - (lastDropWarned.get(deviceId) ?? -Infinity) < 60_000) return;
    if (lastDropWarned.size >= 1_000) lastDropWarned.clear();
    lastDropWarned.set(deviceId, now);
    log.warn(
      { deviceId, reason, bytes, maxBytes: ROUTE_MAX_BYTES, maxPrefixes: ROUTE_MAX_PREFIXES },
      'route announcement dropped: over the size or prefix bound; the device gets no webhooks through the relay until it announces a valid route',
    );
  }

  function clearMarkerTimer(): void {
    if (markerTimer) clearInterval(markerTimer);
    markerTimer = null;
  }

  function sendMarker(c: MqttClient): void {
    const nonce = randomBytes(8).toString('hex');
    marker = nonce;
    c.publish(syncTopic, nonce, { qos: 1 }, (err) => {
      if (err && link?.isCurrent(c)) log.warn({ err }, 'backlog marker not published; it is sent again at the next connect');
    });
    const sentAt = deps.now();
    clearMarkerTimer();
    markerTimer = setInterval(() => {
      if (learned || !link?.isCurrent(c)) return clearMarkerTimer();
      log.error(
        { syncTopic, waitedMs: deps.now() - sentAt },
        'route backlog marker not back yet: unknown references get 503 meanwhile. If this persists, check the relay account ACL (readwrite <prefix>/_relay/#) and that the broker queues more messages per client than there are devices (Mosquitto max_queued_messages)',
      );
    }, MARKER_WARN_MS);
    markerTimer.unref();
  }

  function onConnect(c: MqttClient, clientId: string): void {
    subscribed = false;
    learned = false;
    marker = null;
    sliceStart = performance.now();
    log.info({ url: redactUrl(settings.url), clientId }, 'relay connected to the broker; reading the route backlog');
    c.subscribe({ [fleet.allRoutes]: { qos: 1 }, [syncTopic]: { qos: 1 } }, (err, granted) => {
      const refused = (granted ?? []).filter((g) => g.qos === 128).map((g) => g.topic);
      if (err || refused.length > 0) {
        log.error(
          { err, refused },
          'route subscription refused: check the relay account ACL (read <prefix>/+/route, readwrite <prefix>/_relay/#)',
        );
        return;
      }
      subscribed = true;
      sendMarker(c);
    });
  }

  function onMessage(topic: string, payload: Buffer): void {
    if (topic === syncTopic) {
      if (marker !== null && payload.toString('utf8') === marker && !learned) {
        learned = true;
        clearMarkerTimer();
        const first = firstLearnedAt === null;
        firstLearnedAt ??= deps.now();
        log.info({ first }, 'route backlog read: every retained route is known');
      }
      return;
    }
    const deviceId = fleet.routeDevice(topic);
    if (deviceId === null) return;
    const { route, dropped } = readRouteAnnouncement(deviceId, payload);
    if (dropped) {
      dropWarning(deviceId, dropped, payload.length);
      deps.onRouteDropped?.(deviceId, dropped, payload.length);
    } else if (route === null && payload.length > 0)
      log.warn({ topic }, 'route announcement ignored: not valid, or it claims references of another device');
    deps.onRoute(deviceId, route);
  }

  /** The backlog in slices: after `sliceMs` of work the next packet waits for everything else to run. */
  function inSlices(c: MqttClient): void {
    c.handleMessage = (_packet, callback) => {
      const now = performance.now();
      if (now - sliceStart < sliceMs) return callback();
      setImmediate(() => {
        sliceStart = performance.now();
        callback();
      });
    };
    c.on('message', (topic, payload) => {
      if (link?.isCurrent(c)) onMessage(topic, payload);
    });
  }

  return {
    start() {
      if (link) return;
      const clientId = relayClientId(settings.prefix, deps.replicaId);
      const base = clientOptions(settings, clientId, createTopics(settings.prefix, `_relay/${deps.replicaId}`));
      const { will: _will, ...rest } = base;
      link = createReconnectingClient({
        logger: log,
        url: settings.url,
        // Clean session: the relay has no outbox whose rows a dead client could keep.
        options: { ...rest, clientId, clean: true },
        // Never slower than the fixed period it had: drawn below mqtt.reconnectMinMs, so a replica
        // is back as soon as before while replicas that lost the broker together spread out.
        backoff: { minMs: settings.reconnectMinMs, maxMs: settings.reconnectMinMs },
        now: () => deps.now(),
        say: { lost: 'relay lost the broker; reconnecting', unreachable: 'relay broker unreachable; retrying' },
        prepare: inSlices,
        stopGraceMs: deps.stopGraceMs,
        onConnect: (c) => onConnect(c, clientId),
        onClose: () => {
          subscribed = false;
          learned = false;
          clearMarkerTimer();
        },
        onError: (err) => log.warn({ err }, 'relay broker connection error'),
      });
      link.start();
    },
    async stop() {
      clearMarkerTimer();
      if (link) await link.stop();
    },
    connected: () => isConnected(),
    routesSubscribed: () => subscribed,
    routesLearned: () => isConnected() && subscribed && learned,
    firstLearnedAt: () => firstLearnedAt,
    publish(topic, payload, timeoutMs) {
      const c = link?.current();
      if (!c || !isConnected()) return Promise.reject(new PublishNotAcknowledged('not connected to the broker'));
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
