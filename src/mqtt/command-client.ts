import { randomBytes } from 'node:crypto';
import type { IClientOptions, MqttClient } from 'mqtt';
import { clientOptions, loadMqttConnect, redactUrl } from './connection.js';
import { createTopics } from './topics.js';
import type { CommandEnvelope } from './commands/envelope.js';
import type { MqttSettings } from './types.js';
import { verifyAnswer } from './answer-key.js';

/**
 * `vendgate command send`: publishes one signed command to a device and waits for its answer on
 * `cmd/<name>/result`. A throw-away client with the configured login and TLS, never the device's
 * own client id (that would kick the device off the broker). Only an answer signed by the device's
 * own key counts: anyone who may publish on the result topic could otherwise answer in its name.
 * Forged ones are counted and skipped while the device's own answer is awaited.
 */
export async function sendCommand(input: {
  settings: MqttSettings;
  deviceId: string;
  command: string;
  envelope: CommandEnvelope;
  requestId: string;
  timeoutMs: number;
  /** The device's public answer key (base64 SPKI). */
  devicePublicKey: string;
}): Promise<{ answered: true; result: Record<string, unknown>; forged: number } | { answered: false; detail: string; forged: number }> {
  // mqtt.js is loaded by the command that uses it, not by the service that imports this folder.
  const connect = await loadMqttConnect();
  const { settings, deviceId, command } = input;
  const topics = createTopics(settings.prefix, deviceId);
  const url = settings.url === 'embedded' ? `mqtt://127.0.0.1:${settings.embeddedPort}` : settings.url;
  const { will: _will, ...base } = clientOptions(settings, deviceId, topics);
  const options: IClientOptions = {
    ...base,
    clientId: `${settings.prefix}-operator-${randomBytes(6).toString('hex')}`,
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: Math.min(settings.connectTimeoutMs, input.timeoutMs),
  };
  const resultTopic = topics.result(command);
  const commandTopic = resultTopic.slice(0, -'/result'.length);
  let client: MqttClient | null = null;
  let forged = 0;
  let lastReason = '';
  try {
    return await new Promise((resolve) => {
      const timer = setTimeout(
        () =>
          resolve({
            answered: false,
            forged,
            detail:
              forged > 0
                ? `no answer signed by the device on ${resultTopic} at ${redactUrl(url)} within ${input.timeoutMs} ms; ${forged} answer(s) with this request id were refused (${lastReason}): someone else is answering in the device's name, or the device key given is not this device's`
                : `no answer on ${resultTopic} at ${redactUrl(url)} within ${input.timeoutMs} ms: is device ${deviceId} online, and connected to this broker (its mqtt.url)?`,
          }),
        input.timeoutMs,
      );
      const done = (value: Awaited<ReturnType<typeof sendCommand>>) => {
        clearTimeout(timer);
        resolve(value);
      };
      const c = connect(url, options);
      client = c;
      c.on('error', (err) => done({ answered: false, forged, detail: `${redactUrl(url)}: ${err.message}` }));
      c.on('message', (topic, payload) => {
        if (topic !== resultTopic) return;
        let claimed: unknown;
        try {
          claimed = (JSON.parse(payload.toString('utf8')) as Record<string, unknown>).requestId;
        } catch {
          return; // Someone else's garbage on the result topic: keep waiting for ours.
        }
        if (claimed !== input.requestId) return;
        const checked = verifyAnswer(input.devicePublicKey, deviceId, command, payload.toString('utf8'));
        if (checked.ok) return done({ answered: true, forged, result: checked.result });
        forged += 1;
        lastReason = checked.reason;
      });
      c.once('connect', () => {
        c.subscribe(resultTopic, { qos: 1 }, (err) => {
          if (err)
            return done({ answered: false, forged, detail: `${redactUrl(url)}: could not subscribe to ${resultTopic}: ${err.message}` });
          c.publish(commandTopic, JSON.stringify(input.envelope), { qos: 1, retain: false }, (publishErr) => {
            if (publishErr) done({ answered: false, forged, detail: `${redactUrl(url)} refused the command: ${publishErr.message}` });
          });
        });
      });
    });
  } finally {
    const c = client as MqttClient | null;
    if (c) await new Promise<void>((resolve) => c.end(true, {}, () => resolve()));
  }
}

/**
 * The database a device runs, as its retained `state` says (`dbId`): `vendgate command send` signs
 * for it, so the envelope is refused by any other database (a restored or replaced one). Null when
 * the broker holds no state of the device that names one within `timeoutMs`.
 */
export async function learnDatabase(input: { settings: MqttSettings; deviceId: string; timeoutMs: number }): Promise<string | null> {
  const connect = await loadMqttConnect();
  const { settings, deviceId } = input;
  const topics = createTopics(settings.prefix, deviceId);
  const url = settings.url === 'embedded' ? `mqtt://127.0.0.1:${settings.embeddedPort}` : settings.url;
  const { will: _will, ...base } = clientOptions(settings, deviceId, topics);
  const options: IClientOptions = {
    ...base,
    clientId: `${settings.prefix}-operator-${randomBytes(6).toString('hex')}`,
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: Math.min(settings.connectTimeoutMs, input.timeoutMs),
  };
  const c = connect(url, options);
  try {
    return await new Promise<string | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), input.timeoutMs);
      const done = (value: string | null) => {
        clearTimeout(timer);
        resolve(value);
      };
      c.on('error', () => done(null));
      c.on('message', (topic, payload) => {
        if (topic !== topics.state) return;
        try {
          const state = JSON.parse(payload.toString('utf8')) as { dbId?: unknown };
          if (typeof state.dbId === 'string' && state.dbId !== '') done(state.dbId);
        } catch {
          // not the device's state: keep waiting
        }
      });
      c.once('connect', () => c.subscribe(topics.state, { qos: 1 }, (err) => err && done(null)));
    });
  } finally {
    await new Promise<void>((resolve) => c.end(true, {}, () => resolve()));
  }
}
