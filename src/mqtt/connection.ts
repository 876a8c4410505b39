import { readFileSync } from 'node:fs';
import type { IClientOptions, connect as MqttConnect } from 'mqtt';
import type { MqttSettings } from './types.js';
import type { Topics } from './topics.js';

/** Thrown when the TLS files cannot be read: a configuration problem, named with its path. */
export class MqttConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MqttConfigError';
  }
}

/**
 * mqtt.js options for one connection attempt. Reconnecting is ours (reconnectPeriod 0): every
 * attempt is a fresh client, so nothing of a dead connection (its in-memory store) leaks into the next.
 */
/**
 * mqtt.js's `connect`, loaded when a connection is first wanted (not at import: a service with MQTT
 * off never evaluates mqtt.js). Node hands the package to `import()` as an ES module namespace; the
 * one-file build hands it as CommonJS behind esbuild's interop, where `connect` sits on `default`.
 */
let mqttConnect: Promise<typeof MqttConnect> | null = null;
export function loadMqttConnect(): Promise<typeof MqttConnect> {
  mqttConnect ??= import('mqtt').then(
    (mqtt) => mqtt.connect ?? (mqtt as unknown as { default: { connect: typeof MqttConnect } }).default.connect,
  );
  return mqttConnect;
}

export function clientOptions(settings: MqttSettings, deviceId: string, topics: Topics): IClientOptions {
  const options: IClientOptions = {
    clientId: `${settings.prefix}-${deviceId}`,
    clean: false,
    // aedes speaks only 3.1.1; Mosquitto, EMQX and HiveMQ all do too.
    protocolVersion: 4,
    keepalive: settings.keepaliveSec,
    connectTimeout: settings.connectTimeoutMs,
    reconnectPeriod: 0,
    queueQoSZero: false,
    // mqtt-packet otherwise fills a cache of 65,536 two-byte Buffers (one per message id) at the first
    // packet written: ~6.5 MB of V8 heap on a device that sends a few packets a minute. Off, each
    // message id is written from a fresh 2-byte Buffer. The setting is the library's global, so it
    // also holds for the embedded broker (aedes) in the same process.
    writeCache: false,
    will: { topic: topics.status, payload: Buffer.from('offline'), qos: 1, retain: true },
  };
  if (settings.username !== undefined) options.username = settings.username;
  if (settings.password !== undefined) options.password = settings.password;
  if (isTls(settings.url)) {
    options.rejectUnauthorized = settings.rejectUnauthorized;
    if (settings.caPath) options.ca = readPem(settings.caPath, 'caPath');
    if (settings.certPath) options.cert = readPem(settings.certPath, 'certPath');
    if (settings.keyPath) options.key = readPem(settings.keyPath, 'keyPath');
  }
  return options;
}

export function isTls(url: string): boolean {
  return url.startsWith('mqtts://') || url.startsWith('wss://');
}

/** The URL without user:password@, for logs. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1');
}

/**
 * Full-jitter exponential backoff: a delay drawn uniformly from [0, min(maxMs, minMs · 2^attempt)].
 * After a broker restart a whole fleet loses its connection at the same instant; drawn this way the
 * reconnects (and the resubscribes that follow) spread evenly over the window instead of arriving in
 * waves, and the window doubles while the broker keeps refusing, up to the cap.
 */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(Math.max(attempt, 0), 30));
  return Math.floor(ceiling * Math.min(Math.max(random(), 0), 1 - Number.EPSILON));
}

function readPem(path: string, key: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new MqttConfigError(`mqtt.${key}: cannot read ${path} (${code}); check the path and that the vendgate user may read it`);
  }
}

/** Resolves true when `promise` settled in time, false on timeout. */
export async function withTimeout(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
