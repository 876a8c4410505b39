import type { IClientOptions, MqttClient } from 'mqtt';
import type { Logger } from '../util/logger.js';
import { backoffDelay, loadMqttConnect, redactUrl, withTimeout } from './connection.js';

/** How long stop() waits for a farewell and for the last PUBACKs before dropping the connection. */
export const STOP_GRACE_MS = 2_000;

export interface ReconnectingClientDeps {
  logger: Logger;
  url: string;
  /** mqtt.js options of every attempt (`reconnectPeriod` is forced to 0: reconnecting is ours). */
  options: IClientOptions;
  /** Full-jitter exponential backoff between attempts (connection.ts `backoffDelay`). */
  backoff: { minMs: number; maxMs: number; random?: () => number };
  now(): number;
  /** The log lines of a lost connection and of a broker not reached (with `retryInMs`). */
  say: { lost: string; unreachable: string };
  /** A fresh client, before it connects: install `handleMessage` or message listeners here. */
  prepare?(client: MqttClient): void;
  onConnect?(client: MqttClient, sessionPresent: boolean): void;
  /** The connection `client` is gone (it was connected: `wasConnected`); the next attempt is scheduled. */
  onClose?(client: MqttClient, wasConnected: boolean): void;
  /** An error of the current client; `attempt` 0 is the first since the last connect. */
  onError?(err: Error & { code?: unknown }, attempt: number): void;
  /** stop()'s wait for the farewell and for the last PUBACKs, each (default STOP_GRACE_MS; tests shorten it). */
  stopGraceMs?: number;
}

export interface ReconnectingClient {
  /** Connects now, then again after every loss with backoff, until stop(). */
  start(): void;
  /** The client of the current attempt (connected or not), or null. */
  current(): MqttClient | null;
  /** True while `client` is the current attempt: callbacks of a dead connection check it. */
  isCurrent(client: MqttClient): boolean;
  /** When the current connection came up, or null while there is none. */
  connectedSince(): number | null;
  /**
   * Publishes on the live connection with QoS 1 and returns true; false (nothing sent) while there
   * is none: callers publish again on the next connect.
   */
  publish(topic: string, payload: string | Buffer, retain: boolean, done?: (err?: Error) => void): boolean;
  /**
   * No more attempts. A live connection gets `farewell` (its last words, e.g. `offline`) and then a
   * clean DISCONNECT once the messages in flight are acknowledged, each within the grace (STOP_GRACE_MS), and is
   * dropped after that. Safe to call twice.
   */
  stop(farewell?: (client: MqttClient) => Promise<unknown>): Promise<void>;
}

/**
 * One MQTT connection that comes back: every attempt is a fresh mqtt.js client (nothing of a dead
 * connection, its in-memory store, leaks into the next), and the delay between attempts is drawn
 * with full jitter so a fleet that lost its broker at the same instant does not come back in waves.
 * The monitoring connection, the fleet webhook subscription and the fleet relay all use it.
 */
export function createReconnectingClient(deps: ReconnectingClientDeps): ReconnectingClient {
  const { logger: log, url } = deps;
  let client: MqttClient | null = null;
  let connectedSince: number | null = null;
  let attempt = 0;
  let started = false;
  let stopped = false;
  let stopping: Promise<void> | null = null;
  let retry: NodeJS.Timeout | null = null;
  const stopGraceMs = deps.stopGraceMs ?? STOP_GRACE_MS;

  function connect(): void {
    retry = null;
    if (stopped) return;
    // mqtt.js (with readable-stream, mqtt-packet and their helpers) is loaded by the first attempt:
    // a device with MQTT on evaluates it after it is ready to sell, not before.
    loadMqttConnect().then(
      (mqttConnect) => {
        if (!stopped) attemptWith(mqttConnect);
      },
      (err: Error) => log.error({ err }, 'MQTT: the client library did not load'),
    );
  }

  function attemptWith(mqttConnect: Awaited<ReturnType<typeof loadMqttConnect>>): void {
    const c = mqttConnect(url, { ...deps.options, reconnectPeriod: 0 });
    client = c;
    deps.prepare?.(c);
    c.on('connect', (connack) => {
      if (client !== c || stopped) return;
      attempt = 0;
      connectedSince = deps.now();
      deps.onConnect?.(c, connack.sessionPresent);
    });
    c.on('close', () => onClose(c));
    c.on('error', (err) => {
      if (client === c) deps.onError?.(err, attempt);
    });
  }

  function onClose(c: MqttClient): void {
    if (client !== c) return;
    const wasConnected = connectedSince !== null;
    connectedSince = null;
    client = null;
    deps.onClose?.(c, wasConnected);
    c.end(true);
    if (stopped) return;
    const delay = backoffDelay(attempt, deps.backoff.minMs, deps.backoff.maxMs, deps.backoff.random);
    attempt += 1;
    if (wasConnected) log.warn({ url: redactUrl(url), retryInMs: delay }, deps.say.lost);
    else log.debug({ url: redactUrl(url), retryInMs: delay, attempt }, deps.say.unreachable);
    retry = setTimeout(connect, delay);
    retry.unref();
  }

  async function stopOnce(farewell?: (client: MqttClient) => Promise<unknown>): Promise<void> {
    stopped = true;
    if (retry) clearTimeout(retry);
    const c = client;
    if (c && connectedSince !== null) {
      // A connection that dies meanwhile never acknowledges: stop waiting as soon as it is gone.
      const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
      if (farewell) await withTimeout(Promise.race([closed, farewell(c)]), stopGraceMs);
      // end(false) waits for the messages still in flight, so their PUBACKs still count.
      const ended = await withTimeout(
        Promise.race([closed, new Promise<void>((resolve) => c.end(false, {}, () => resolve()))]),
        stopGraceMs,
      );
      // end() again would be a no-op while the first one waits: drop the socket itself.
      if (!ended) c.stream?.destroy();
    } else if (c) {
      c.end(true);
    }
    client = null;
    connectedSince = null;
  }

  return {
    start() {
      if (started || stopped) return;
      started = true;
      connect();
    },
    current: () => client,
    isCurrent: (c) => client === c,
    connectedSince: () => connectedSince,
    publish(topic, payload, retain, done) {
      const c = client;
      if (!c || connectedSince === null) return false;
      c.publish(topic, payload, { qos: 1, retain }, (err) => {
        if (err && client === c) log.warn({ err, topic }, 'MQTT publish failed');
        done?.(err ?? undefined);
      });
      return true;
    },
    stop(farewell) {
      stopping ??= stopOnce(farewell);
      return stopping;
    },
  };
}
