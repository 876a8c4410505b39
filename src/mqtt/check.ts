import { randomBytes } from 'node:crypto';
import type { IClientOptions, MqttClient } from 'mqtt';
import { clientOptions, loadMqttConnect, redactUrl, MqttConfigError } from './connection.js';
import { createTopics } from './topics.js';
import type { TopicPayloads } from './topic-payloads.js';
import type { MqttSettings } from './types.js';

/** Why a check failed, so the selftest can pick the hint (and WARN for a stopped embedded broker). */
export type MqttCheckFailure = 'disabled' | 'refused' | 'unreachable' | 'timeout' | 'auth' | 'tls' | 'config' | 'no_echo' | 'error';

export interface MqttCheckResult {
  ok: boolean;
  /** One line for people; never contains the password. */
  detail: string;
  reason?: MqttCheckFailure;
  /** The broker URL that was tried, without credentials. */
  url: string;
  /** Publish → own message back, when ok. */
  rttMs?: number;
}

/** The URL the service connects to: `embedded` is the in-process broker on 127.0.0.1:embeddedPort. */
export function brokerUrl(settings: MqttSettings): string {
  return settings.url === 'embedded' ? `mqtt://127.0.0.1:${settings.embeddedPort}` : settings.url;
}

/**
 * Options for a short-lived side connection. It shares TLS and credentials with the service's own
 * (clientOptions) but never its identity: the same clientId would kick the service off the broker,
 * and its last will would announce the device offline.
 */
function sideOptions(settings: MqttSettings, deviceId: string, timeoutMs: number): IClientOptions {
  const base = clientOptions(settings, deviceId, createTopics(settings.prefix, deviceId));
  const { will: _will, ...rest } = base;
  if (settings.url === 'embedded') {
    // The embedded broker lets anonymous clients read and publish the selftest probe; whatever
    // else may hold its port (the service not running, another program) never sees the login.
    delete rest.username;
    delete rest.password;
  }
  return {
    ...rest,
    clientId: `${settings.prefix}-${deviceId}-selftest-${randomBytes(4).toString('hex')}`,
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: Math.min(settings.connectTimeoutMs, timeoutMs),
  };
}

function classify(err: unknown): MqttCheckFailure {
  const e = err as { code?: unknown; message?: string };
  const code = typeof e.code === 'string' ? e.code : '';
  if (code === 'ECONNREFUSED') return 'refused';
  if (['ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE'].includes(code)) return 'unreachable';
  if (code.includes('CERT') || code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /certificate|ssl|tls/i.test(e.message ?? ''))
    return 'tls';
  // CONNACK return codes 4 (bad user name or password) and 5 (not authorized), MQTT 5 0x86/0x87.
  if (typeof e.code === 'number' && [4, 5, 134, 135].includes(e.code)) return 'auth';
  if (/not authori[sz]ed|bad user ?name or password/i.test(e.message ?? '')) return 'auth';
  if (/connack timeout/i.test(e.message ?? '')) return 'timeout';
  return 'error';
}

function describe(reason: MqttCheckFailure, url: string, err: unknown, timeoutMs: number): string {
  const message = err instanceof Error ? err.message : String(err ?? '');
  switch (reason) {
    case 'refused':
      return `${url} refused the connection (nothing listening)`;
    case 'unreachable':
      return `${url} unreachable (${message})`;
    case 'timeout':
      return `${url}: no answer within ${timeoutMs} ms`;
    case 'auth':
      return `${url} refused the credentials (${message})`;
    case 'tls':
      return `${url}: TLS failed (${message})`;
    case 'config':
      return message;
    default:
      return `${url}: ${message}`;
  }
}

/** Connects with a bounded wait; rejects with the first error. */
async function connectOnce(url: string, options: IClientOptions, timeoutMs: number): Promise<MqttClient> {
  // Loaded here, not at import: the service imports this folder and need not evaluate mqtt.js to start.
  const connect = await loadMqttConnect();
  return new Promise((resolve, reject) => {
    const client = connect(url, options);
    const timer = setTimeout(() => finish(Object.assign(new Error('timeout'), { timeout: true })), timeoutMs);
    client.once('connect', () => finish());
    client.once('error', (err) => finish(err));
    client.once('close', () => finish(new Error('connection closed before CONNACK')));
    function finish(err?: Error): void {
      clearTimeout(timer);
      client.removeAllListeners('connect');
      client.removeAllListeners('close');
      if (!err) {
        client.removeAllListeners('error');
        client.on('error', () => {});
        resolve(client);
        return;
      }
      client.removeAllListeners('error');
      client.on('error', () => {});
      client.end(true);
      reject(err);
    }
  });
}

function settled(client: MqttClient): Promise<void> {
  return new Promise((resolve) => client.end(true, {}, () => resolve()));
}

/**
 * Connects as a throw-away client, subscribes to a unique topic under the device's prefix, publishes
 * one QoS 1 message to it and waits for it to come back. Proves the broker accepts our credentials
 * and routes our messages, which a TCP connect alone does not.
 */
export async function checkMqttRoundTrip(
  settings: MqttSettings,
  options: { deviceId: string; timeoutMs: number },
): Promise<MqttCheckResult> {
  if (settings.url === '') return { ok: false, reason: 'disabled', url: '', detail: 'MQTT is disabled (mqtt.url is empty)' };
  const url = redactUrl(brokerUrl(settings));
  const deadline = Date.now() + options.timeoutMs;
  let connectOptions: IClientOptions;
  try {
    connectOptions = sideOptions(settings, options.deviceId, options.timeoutMs);
  } catch (err) {
    if (err instanceof MqttConfigError) return { ok: false, reason: 'config', url, detail: err.message };
    throw err;
  }
  let client: MqttClient;
  try {
    client = await connectOnce(brokerUrl(settings), connectOptions, options.timeoutMs);
  } catch (err) {
    const reason = (err as { timeout?: boolean }).timeout ? 'timeout' : classify(err);
    return { ok: false, reason, url, detail: describe(reason, url, err, options.timeoutMs) };
  }
  const nonce = randomBytes(8).toString('hex');
  const topic = `${createTopics(settings.prefix, options.deviceId).selftest}/probe/${nonce}`;
  try {
    const rttMs = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(Object.assign(new Error('no_echo'), { noEcho: true })), Math.max(0, deadline - Date.now()));
      let sentAt = 0;
      client.on('message', (received, payload) => {
        if (received === topic && payload.toString() === nonce) {
          clearTimeout(timer);
          resolve(Date.now() - sentAt);
        }
      });
      client.subscribe(topic, { qos: 1 }, (err, granted) => {
        if (err || granted?.[0]?.qos === 128) {
          clearTimeout(timer);
          reject(Object.assign(err ?? new Error(`subscription to ${topic} refused by the broker`), { code: 5 }));
          return;
        }
        sentAt = Date.now();
        client.publish(topic, nonce, { qos: 1, retain: false }, (pubErr) => {
          if (pubErr) {
            clearTimeout(timer);
            reject(pubErr);
          }
        });
      });
    });
    return { ok: true, url, rttMs, detail: `${url}: connected, published and received our own message in ${rttMs} ms` };
  } catch (err) {
    if ((err as { noEcho?: boolean }).noEcho) {
      return {
        ok: false,
        reason: 'no_echo',
        url,
        detail: `${url}: connected, but our own message did not come back within ${options.timeoutMs} ms`,
      };
    }
    const reason = classify(err);
    return { ok: false, reason, url, detail: describe(reason, url, err, options.timeoutMs) };
  } finally {
    await settled(client);
  }
}

/**
 * Publishes a selftest report retained on `<prefix>/<deviceId>/selftest`, in the same shape the
 * service uses (`{ at, report }`), from a side connection (the CLI runs outside the service).
 */
export async function publishSelftestResult(
  settings: MqttSettings,
  options: { deviceId: string; timeoutMs: number; report: unknown; at: string },
): Promise<{ ok: boolean; detail: string }> {
  if (settings.url === '') return { ok: false, detail: 'MQTT is disabled' };
  const url = redactUrl(brokerUrl(settings));
  let client: MqttClient;
  try {
    client = await connectOnce(brokerUrl(settings), sideOptions(settings, options.deviceId, options.timeoutMs), options.timeoutMs);
  } catch (err) {
    return { ok: false, detail: `not published: ${describe(classify(err), url, err, options.timeoutMs)}` };
  }
  const topic = createTopics(settings.prefix, options.deviceId).selftest;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no PUBACK within ${options.timeoutMs} ms`)), options.timeoutMs);
      const message: TopicPayloads['selftest'] = { at: options.at, report: options.report };
      client.publish(topic, JSON.stringify(message), { qos: 1, retain: true }, (err) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      });
    });
    return { ok: true, detail: `published retained on ${topic}` };
  } catch (err) {
    return { ok: false, detail: `not published: ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    await settled(client);
  }
}

/** How long after the SUBACK a retained message may still be on its way. */
const RETAINED_GRACE_MS = 500;

/**
 * Whether the broker at the embedded broker's port is the service's own: it holds the id the
 * service wrote (`embeddedInstance`) retained on `<prefix>/<deviceId>/broker`. Another program on
 * that port (a Mosquitto, a stale demo) does not: `foreign`. `unreachable` when it cannot be asked.
 */
export async function embeddedBrokerIdentity(
  settings: MqttSettings,
  options: { deviceId: string; timeoutMs: number; expected: string },
): Promise<'ours' | 'foreign' | 'unreachable'> {
  let client: MqttClient;
  try {
    client = await connectOnce(brokerUrl(settings), sideOptions(settings, options.deviceId, options.timeoutMs), options.timeoutMs);
  } catch {
    return 'unreachable';
  }
  const topic = createTopics(settings.prefix, options.deviceId).broker;
  try {
    return await new Promise<'ours' | 'foreign'>((resolve) => {
      let grace: NodeJS.Timeout | null = null;
      const timer = setTimeout(() => resolve('foreign'), options.timeoutMs);
      const done = (answer: 'ours' | 'foreign') => {
        clearTimeout(timer);
        if (grace) clearTimeout(grace);
        resolve(answer);
      };
      client.on('message', (received, payload) => {
        if (received === topic) done(payload.toString() === options.expected ? 'ours' : 'foreign');
      });
      client.subscribe(topic, { qos: 0 }, (err) => {
        if (err) return done('foreign');
        grace = setTimeout(() => done('foreign'), RETAINED_GRACE_MS);
      });
    });
  } finally {
    await settled(client);
  }
}
