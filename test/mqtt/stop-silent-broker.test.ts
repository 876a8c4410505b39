/**
 * A broker that lets a client in and then acknowledges nothing (a hung broker, a half-dead bridge):
 * stop() waits a grace period for the last acknowledgements and then closes the socket itself. It
 * must not leave the connection open behind a stop that already returned.
 */
import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createBrokerWebhookSubscription, createRelayConnection } from '../../src/mqtt/index.js';
import { mqttSchema } from '../../src/settings/sections/mqtt.js';
import { systemClock } from '../../src/util/index.js';
import { waitFor } from '../helpers/wait.js';

const logger = pino({ level: 'silent' });
/** CONNACK, session not present, accepted: all this broker ever says. */
const CONNACK = Buffer.from([0x20, 0x02, 0x00, 0x00]);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A TCP server on a free port that answers the first packet with CONNACK and then stays silent. */
async function silentBroker() {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('data', () => socket.write(CONNACK));
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `mqtt://127.0.0.1:${port}`, open: () => sockets.size };
}

/** The clients' stop() grace, shortened from its 2 s: the broker here never acknowledges, so each case waits it out. */
const GRACE_MS = 200;

type MqttSettings = ReturnType<ReturnType<typeof mqttSchema>['parse']>;

/** The two fleet clients with a stop() of their own, each as the test starts it. */
const CLIENTS = [
  {
    name: 'the fleet webhook subscription',
    what: 'the subscription to connect',
    create: (settings: MqttSettings) =>
      createBrokerWebhookSubscription(
        {
          clock: systemClock,
          logger,
          deviceId: 'vm1',
          provider: 'gerege',
          referencePrefixes: ['vm1-db1-'],
          ingest: async () => 'stored',
          stopGraceMs: GRACE_MS,
        },
        settings,
      ),
  },
  {
    name: 'the fleet relay',
    what: 'the relay to connect',
    create: (settings: MqttSettings) =>
      createRelayConnection({ logger, replicaId: 'r1', onRoute: () => {}, now: () => Date.now(), stopGraceMs: GRACE_MS }, settings),
  },
];

describe('stop() against a broker that acknowledges nothing', () => {
  for (const { name, what, create } of CLIENTS)
    it(`${name} closes its socket once the grace is over`, async () => {
      const broker = await silentBroker();
      const settings = mqttSchema().parse({ url: broker.url, prefix: 'stop', reconnectMinMs: 100, reconnectMaxMs: 300 });
      const client = create(settings);
      cleanups.push(() => client.stop());
      client.start();
      await waitFor(() => client.connected(), { timeoutMs: 5_000, what });
      expect(broker.open()).toBe(1);
      await client.stop();
      await waitFor(() => broker.open() === 0, { timeoutMs: 1_000, what: 'the socket to close after stop()' });
    });
});
