/**
 * A whole fleet on this machine, for the fleet tests and `npm run fleet`: two real Mosquitto brokers
 * (devices on A, relays on B, joined by the shipped bridge, TLS and ACLs), relay replicas
 * (`dist/main.js relay`) behind one URL, N real gateway processes (`dist/main.js start`) with
 * webhooks from the broker, and the Gerege simulator sending every webhook to that one URL.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type MqttClient } from 'mqtt';
import { createSimulator, type Simulator } from '../../../../src/simulator/index.js';
import { decodeWebhookMessage } from '../../../../src/mqtt/index.js';
import { freePort, startService, type Service } from '../../../helpers/service.js';
import { mosquittoFrom, writePasswordFile, TLS_DIR, type Mosquitto } from './mosquitto.js';
import { startLoadBalancer, type LoadBalancer } from './load-balancer.js';
import { relayProcess, type RelayProcess } from './relay-process.js';
import { startOutageProxy, type OutageProxy } from '../../../helpers/outage-proxy.js';
import { waitFor } from '../../../helpers/wait.js';
import { callJson } from '../../../helpers/json-http.js';
import { readRows } from '../../../helpers/database.js';

export const SETTLED = ['vended', 'refunded', 'canceled', 'expired', 'failed', 'vend_uncertain'];
export const CA = join(TLS_DIR, 'ca.pem');

export interface FleetDevice {
  id: string;
  password: string;
  svc: Service;
  /** Every actuation jams (vend fails → refund): exercises refund events routed by intent lookup. */
  jammed: boolean;
  /** The device's link to its broker, through a TCP proxy the test can cut (device 1 only). */
  brokerLink: OutageProxy | null;
}

export interface PublishedWebhook {
  topicDevice: string;
  body: any;
}

export interface Fleet {
  dir: string;
  sim: Simulator;
  brokerA: Mosquitto;
  brokerB: Mosquitto;
  relays: RelayProcess[];
  lb: LoadBalancer;
  devices: FleetDevice[];
  /** Every webhook message seen on the relay broker, as the operator account reads it. */
  published: PublishedWebhook[];
  /** The operator's own client on the given broker (ACL tests). */
  accounts: Record<string, string>;
  query<T = Record<string, any>>(device: FleetDevice, sql: string, ...params: unknown[]): T[];
  createOrder(device: FleetDevice, slot?: string): Promise<{ orderId: number; invoiceId: string; reference: string }>;
  waitSettled(device: FleetDevice, orderId: number, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

/**
 * The two brokers from the shipped configs: B (the relays') first, then A (the devices'), bridged to
 * B. Both read the same accounts (a password file each) and the shipped ACL.
 */
export async function startBrokers(dir: string, accounts: Record<string, string>): Promise<{ brokerA: Mosquitto; brokerB: Mosquitto }> {
  const [portA, portB] = [await freePort(), await freePort()];
  for (const name of ['a', 'b']) {
    mkdirSync(join(dir, name), { recursive: true });
    writePasswordFile(join(dir, name, 'fleet.passwd'), accounts);
  }
  const brokerB = mosquittoFrom('relay-broker.conf', { dir: join(dir, 'b'), port: portB });
  const brokerA = mosquittoFrom('device-broker.conf', {
    dir: join(dir, 'a'),
    port: portA,
    bridgeTo: portB,
    bridgePassword: accounts.bridge,
  });
  await brokerB.start();
  try {
    await brokerA.start();
  } catch (err) {
    await brokerB.stop();
    throw err;
  }
  return { brokerA, brokerB };
}

/** A client of a fleet broker with one of the accounts (TLS with the test CA). */
/** A client of a fleet broker with one of the accounts (TLS with the test CA); rejects when refused. */
export async function mqttClient(
  url: string,
  username: string,
  password: string,
  clientId: string,
  options: { clean?: boolean; reconnect?: boolean } = {},
): Promise<MqttClient> {
  const client = connect(url, {
    clientId,
    username,
    password,
    protocolVersion: 4,
    clean: options.clean ?? true,
    reconnectPeriod: options.reconnect ? 200 : 0,
    ca: readFileSync(CA),
  });
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  client.on('error', () => {});
  return client;
}

export async function startFleet(options: { devices: number; relays: number; jammed?: number }): Promise<Fleet> {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-fleet-'));
  const password = () => randomBytes(9).toString('hex');
  const ids = Array.from({ length: options.devices }, (_, i) => `fl-${i}`);
  const accounts: Record<string, string> = { relay: password(), bridge: password(), operator: password() };
  for (const id of ids) accounts[id] = password();
  const cleanup: (() => Promise<void> | void)[] = [() => rmSync(dir, { recursive: true, force: true })];
  const stop = async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  };
  try {
    const { brokerA, brokerB } = await startBrokers(dir, accounts);
    cleanup.push(() => brokerB.stop());
    cleanup.push(() => brokerA.stop());

    const relays: RelayProcess[] = [];
    const lb = await startLoadBalancer(() => relays.map((r) => r.port));
    cleanup.push(() => lb.close());
    const sim = createSimulator({
      provider: 'gerege',
      seed: 16,
      webhookUrl: `${lb.url}/webhooks/gerege`,
      // Retries that outlast a broker restart (Gerege retries 8 times).
      webhookRetryDelaysMs: [200, 400, 800, 1_600, 3_200, 6_400, 6_400],
      webhookTimeoutMs: 5_000,
    });
    await sim.start();
    cleanup.push(() => sim.stop());
    const info = sim.info();

    const published: PublishedWebhook[] = [];
    const spy = await mqttClient(brokerB.url, 'operator', accounts.operator!, `spy-${process.pid}`, { clean: false, reconnect: true });
    cleanup.push(() => spy.endAsync(true));
    spy.on('message', (topic, payload) => {
      const [, topicDevice] = topic.split('/');
      published.push({ topicDevice: topicDevice!, body: JSON.parse(decodeWebhookMessage(payload).rawBody.toString()) });
    });
    await spy.subscribeAsync('vendgate/+/webhooks/#', { qos: 1 });

    for (let i = 0; i < options.relays; i += 1) {
      const relay = await relayProcess({
        dir,
        name: `relay-${i}`,
        config: {
          relay: {
            providers: ['gerege'],
            publishTimeoutMs: 2_000,
            statsIntervalSec: 5,
            routeLookup: { baseUrl: info.url, clientId: info.clientId },
          },
          mqtt: { url: brokerB.url, username: 'relay', caPath: CA, reconnectMinMs: 200 },
          log: { level: 'debug' },
        },
        env: {
          VENDGATE_WEBHOOK_SECRETS: info.webhookSecret,
          VENDGATE_RELAY_LOOKUP_CLIENT_SECRET: info.clientSecret!,
          VENDGATE_MQTT_PASSWORD: accounts.relay!,
        },
      });
      relays.push(relay);
      cleanup.push(() => relay.kill('SIGTERM'));
      await relay.start();
    }

    const devices: FleetDevice[] = [];
    const jammedCount = options.jammed ?? 0;
    // A few at a time: two cores start N node processes.
    for (let i = 0; i < ids.length; i += 4) {
      const batch = await Promise.all(
        ids.slice(i, i + 4).map(async (id, k) => {
          const jammed = i + k >= ids.length - jammedCount;
          // Device 1 reaches its broker through a proxy: cutting it is a network outage, the process lives on.
          const brokerLink = i + k === 1 ? await startOutageProxy({ port: brokerA.port }) : null;
          if (brokerLink) cleanup.push(() => brokerLink.stop());
          const brokerUrl = brokerLink ? `mqtts://127.0.0.1:${new URL(brokerLink.url).port}` : brokerA.url;
          const svc = await startService({
            readyTimeoutMs: 60_000,
            config: {
              device: { id },
              provider: {
                name: 'gerege',
                baseUrl: info.url,
                clientId: info.clientId,
                invoiceTtlSec: 120,
                requestTimeoutMs: 2_000,
                createDeadlineMs: 30_000,
              },
              // Slow polling: the relay and the broker, not the poller, should bring most payments.
              poll: { intervalMs: 3_000, maxBackoffMs: 5_000 },
              http: { webhook: { retryBaseMs: 200, retryMaxMs: 2_000, silenceGraceSec: 60 } },
              actuator: { sim: { durationMs: 20, ...(jammed ? { failMode: 'fail' } : {}) } },
              mqtt: { url: brokerUrl, username: id, caPath: CA, reconnectMinMs: 200, reconnectMaxMs: 2_000, telemetryIntervalSec: 3_600 },
              fleet: { webhookSource: 'broker' },
              // The failing machine refunds every sale; its slot must not be taken out of sale by the
              // jam rule before the rounds are over.
              ...(jammed ? { slots: { jamAfterFailures: 100 } } : {}),
            },
            env: {
              VENDGATE_PROVIDER_CLIENT_SECRET: info.clientSecret!,
              VENDGATE_WEBHOOK_SECRETS: info.webhookSecret,
              VENDGATE_MQTT_PASSWORD: accounts[id]!,
            },
          });
          cleanup.push(() => svc.stop());
          return { id, password: accounts[id]!, svc, jammed, brokerLink };
        }),
      );
      devices.push(...batch);
    }
    // Every relay knows every device before the first payment (their routes came over the bridge).
    await waitFor(
      () =>
        relays.every(
          (r) =>
            new Set(
              r
                .logs()
                .filter((l) => l.msg === 'device route announced')
                .map((l) => l.deviceId),
            ).size === ids.length,
        ),
      { timeoutMs: 60_000, what: 'every relay to learn every device route' },
    );

    const query = <T>(device: FleetDevice, sql: string, ...params: unknown[]) => readRows<T>(device.svc.dbPath, sql, ...params);
    const call = (device: FleetDevice, method: string, path: string, body?: unknown) =>
      callJson(`${device.svc.localUrl}${path}`, method, body);
    return {
      dir,
      sim,
      brokerA,
      brokerB,
      relays,
      lb,
      devices,
      published,
      accounts,
      query: query as Fleet['query'],
      stop,
      async createOrder(device, slot = 'A1') {
        return waitFor(
          async () => {
            const answer = await call(device, 'POST', '/api/orders', { slot }).catch(() => null);
            if (answer?.status === 201 && answer.json.invoiceId) return answer.json;
            // Busy with the previous customer, or restarting: the next customer waits.
            if (!answer || answer.status === 409 || answer.status === 503) return null;
            throw new Error(`order refused on ${device.id}: ${answer.status} ${JSON.stringify(answer.json)}`);
          },
          { timeoutMs: 60_000, what: `an order on ${device.id}` },
        );
      },
      async waitSettled(device, orderId, timeoutMs = 60_000) {
        return waitFor(
          async () => {
            const answer = await call(device, 'GET', `/api/orders/${orderId}`).catch(() => null);
            return answer?.status === 200 && SETTLED.includes(answer.json.state) ? (answer.json.state as string) : null;
          },
          { timeoutMs, what: `order ${orderId} on ${device.id} to settle` },
        );
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
