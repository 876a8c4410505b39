import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Aedes, type AedesOptions } from 'aedes';
import { startEmbeddedBroker, type EmbeddedBroker } from '../../src/mqtt/index.js';

export interface TestBroker {
  url: string;
  /** True for the in-process aedes broker (closed by close()); false for the shared MQTT_TEST_URL broker. */
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * The broker a test talks to: MQTT_TEST_URL when set (Mosquitto on CI, shared by every test and
 * keeping retained messages — isolate with uniqueId() and clean up), else a fresh embedded aedes
 * broker on an ephemeral port.
 */
export async function testBroker(): Promise<TestBroker> {
  const shared = process.env.MQTT_TEST_URL;
  if (shared) return { url: shared, embedded: false, close: async () => {} };
  const broker = await startEmbeddedBroker({ host: '127.0.0.1', port: 0 });
  return { url: broker.url, embedded: true, close: () => broker.close() };
}

/**
 * An embedded aedes broker with the test's own options (one that holds or drops a PUBLISH, say) on an
 * ephemeral port: always aedes, whatever MQTT_TEST_URL says. `sockets` are its open client
 * connections, for a test to cut; close() cuts them and stops the broker.
 */
export async function aedesBroker(
  options: AedesOptions = {},
): Promise<{ aedes: Aedes; url: string; sockets: Set<Socket>; close(): Promise<void> }> {
  const aedes = await Aedes.createBroker(options);
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    aedes.handle(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    aedes,
    url: `mqtt://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sockets,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface TappedPublish {
  topic: string;
  payload: string;
  retain: boolean;
  clientId: string;
}

export interface TappedSubscribe {
  topic: string;
  qos: number;
  clientId: string;
}

/**
 * An embedded broker the test can stop and start again on the same port (the broker "going away").
 * Always aedes, whatever MQTT_TEST_URL says: a shared Mosquitto cannot be stopped by a test. It
 * records every PUBLISH it accepts from a client (`received`), every subscription a client makes
 * (`subscribed`) and every QoS 1 PUBACK a client sends (`acked`), across restarts, from the first
 * instant it listens — a subscriber that reconnects after the restart could miss the first ones.
 * A restart is a fresh aedes: the sessions and retained messages are gone. `drop(clientId)` closes
 * one client's socket while the broker keeps running, so a `clean: false` session stays.
 */
export async function restartableBroker(): Promise<{
  url: string;
  port: number;
  received: TappedPublish[];
  subscribed: TappedSubscribe[];
  acked: TappedPublish[];
  stop(): Promise<void>;
  start(): Promise<void>;
  drop(clientId: string): boolean;
}> {
  const received: TappedPublish[] = [];
  const subscribed: TappedSubscribe[] = [];
  const acked: TappedPublish[] = [];
  let running: { close(): Promise<void>; drop(clientId: string): boolean } | null = null;
  let port = 0;
  async function start(): Promise<void> {
    if (running) return;
    const broker = await Aedes.createBroker();
    broker.on('publish', (packet, client) => {
      if (client) received.push({ topic: packet.topic, payload: packet.payload.toString(), retain: packet.retain, clientId: client.id });
    });
    broker.on('subscribe', (subscriptions, client) => {
      for (const { topic, qos } of subscriptions) subscribed.push({ topic, qos, clientId: client.id });
    });
    broker.on('ack', (packet, client) => {
      if (packet && 'topic' in packet) {
        acked.push({ topic: packet.topic, payload: packet.payload.toString(), retain: packet.retain, clientId: client.id });
      }
    });
    const clients = new Map<string, Socket>();
    broker.on('client', (client) => clients.set(client.id, client.conn as Socket));
    broker.on('clientDisconnect', (client) => {
      if (clients.get(client.id) === client.conn) clients.delete(client.id);
    });
    broker.on('clientError', () => {});
    broker.on('connectionError', () => {});
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      broker.handle(socket);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    running = {
      async close() {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => broker.close(() => resolve()));
        await closed;
      },
      drop(clientId) {
        const socket = clients.get(clientId);
        socket?.destroy();
        return socket !== undefined;
      },
    };
  }
  await start();
  return {
    url: `mqtt://127.0.0.1:${port}`,
    port,
    received,
    subscribed,
    acked,
    start,
    drop: (clientId) => running?.drop(clientId) ?? false,
    async stop() {
      const r = running;
      running = null;
      await r?.close();
    },
  };
}

/** A device id / topic prefix no other test (or earlier run against the shared broker) uses. */
export function uniqueId(label: string): string {
  return `${label}-${process.pid}-${randomBytes(4).toString('hex')}`.toLowerCase();
}
