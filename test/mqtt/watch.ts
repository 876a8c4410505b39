import { connect, type MqttClient } from 'mqtt';
import { randomBytes } from 'node:crypto';
import { waitFor, type WaitOptions } from '../helpers/wait.js';

export interface Received {
  topic: string;
  payload: string;
  retain: boolean;
}

export interface Watcher {
  messages: Received[];
  /** Messages on exactly this topic, oldest first. */
  on(topic: string): Received[];
  /** Waits until `predicate` holds over what has arrived (test/helpers/wait.ts), naming the messages on failure. */
  until(predicate: () => boolean, options?: WaitOptions): Promise<true>;
  /** The first message on `topic` (arrived already or to come) that satisfies `match`. */
  next(topic: string, match?: (message: Received) => boolean, timeoutMs?: number): Promise<Received>;
  publish(topic: string, payload: string, options?: { retain?: boolean }): Promise<void>;
  /** Publishes an empty retained message on every topic seen, so a shared broker keeps nothing of this test. */
  clearRetained(): Promise<void>;
  close(): Promise<void>;
}

/** A subscriber on the test broker (QoS 1), connected and subscribed when this resolves. */
export async function watch(url: string, filters: string[]): Promise<Watcher> {
  const client = connect(url, {
    clientId: `watch-${randomBytes(6).toString('hex')}`,
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: 200,
  });
  client.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  const messages: Received[] = [];
  client.on('message', (topic, payload, packet) => {
    messages.push({ topic, payload: payload.toString('utf8'), retain: packet.retain });
  });
  await client.subscribeAsync(filters, { qos: 1 });

  /** The suite's waitFor, whose failure also lists what has arrived. */
  function until(predicate: () => boolean, options: WaitOptions = {}): Promise<true> {
    const what = options.what;
    return waitFor(predicate, {
      ...options,
      what: () => `${typeof what === 'function' ? what() : (what ?? 'a condition')}; got ${messages.length} messages: ${summary(messages)}`,
    });
  }

  return {
    messages,
    on: (topic) => messages.filter((m) => m.topic === topic),
    until,
    async next(topic, match = () => true, timeoutMs = 30_000) {
      let found: Received | undefined;
      await until(() => (found = messages.find((m) => m.topic === topic && match(m))) !== undefined, {
        timeoutMs,
        what: `a message on ${topic}`,
      });
      return found!;
    },
    async publish(topic, payload, options = {}) {
      await client.publishAsync(topic, payload, { qos: 1, retain: options.retain ?? false });
    },
    async clearRetained() {
      const topics = new Set(messages.map((m) => m.topic));
      for (const topic of topics) await client.publishAsync(topic, '', { qos: 1, retain: true });
    },
    close: () => client.endAsync(),
  };
}

/**
 * The retained messages the broker holds under `filter` (ending in `/#`), as a fresh subscriber sees
 * them. Complete: a marker published after subscribing comes back only after the retained ones.
 */
export async function retainedNow(url: string, filter: string, timeoutMs = 30_000): Promise<Map<string, string>> {
  const client: MqttClient = connect(url, {
    clientId: `peek-${randomBytes(6).toString('hex')}`,
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: 0,
  });
  client.on('error', () => {});
  const retained = new Map<string, string>();
  // Under selftest/: the one place an anonymous client may publish on the service's embedded broker.
  const marker = `${filter.replace(/#$/, '')}selftest/peek/${randomBytes(4).toString('hex')}`;
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    const synced = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`retainedNow: no marker back within ${timeoutMs} ms`)), timeoutMs);
      client.on('message', (topic, payload, packet) => {
        if (topic === marker) {
          clearTimeout(timer);
          resolve();
          return;
        }
        if (packet.retain) retained.set(topic, payload.toString('utf8'));
      });
    });
    await client.subscribeAsync(filter, { qos: 1 });
    await client.publishAsync(marker, 'sync', { qos: 1 });
    await synced;
    return retained;
  } finally {
    await client.endAsync();
  }
}

function summary(messages: Received[]): string {
  return messages
    .slice(-8)
    .map((m) => `${m.topic}=${m.payload.slice(0, 60)}`)
    .join(' | ');
}

/** Removes every retained message under `filter` (the shared test broker keeps them across runs). */
export async function clearRetainedUnder(url: string, filter: string): Promise<void> {
  const retained = await retainedNow(url, filter);
  if (retained.size === 0) return;
  const client = connect(url, { clientId: `clear-${randomBytes(6).toString('hex')}`, protocolVersion: 4, clean: true, reconnectPeriod: 0 });
  client.on('error', () => {});
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    for (const topic of retained.keys()) await client.publishAsync(topic, '', { qos: 1, retain: true });
  } finally {
    await client.endAsync();
  }
}
