import { connect, type MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startService, type Service } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The embedded broker of the real service: any local program may read, none may command the
 * device anonymously (cmd/refund from an anonymous client used to be executed).
 */
const clients: MqttClient[] = [];
function client(port: number, login: { username?: string; password?: string } = {}): MqttClient {
  const c = connect(`mqtt://127.0.0.1:${port}`, { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5_000, ...login });
  c.on('error', () => {});
  clients.push(c);
  return c;
}
afterEach(() => {
  for (const c of clients.splice(0)) c.end(true);
});

async function connected(c: MqttClient): Promise<MqttClient> {
  await waitFor(() => c.connected, { what: 'the MQTT client to connect' });
  return c;
}

function collect(c: MqttClient, topic: string): string[] {
  const seen: string[] = [];
  c.on('message', (received, payload) => {
    if (received.startsWith(topic.replace('#', ''))) seen.push(`${received} ${payload.toString()}`);
  });
  c.subscribe(topic, { qos: 1 });
  return seen;
}

describe('embedded broker: anonymous clients read, never command', () => {
  let svc: Service;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    svc = await startService({ config: { mqtt: { url: 'embedded', embeddedPort: port } } });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('an anonymous client reads the retained status', async () => {
    const reader = await connected(client(port));
    const seen = collect(reader, 'vendgate/svc-test/status');
    await waitFor(() => seen.includes('vendgate/svc-test/status online'), { what: 'the retained status' });
  });

  it('an anonymous cmd/refund and cmd/ping are refused by the broker and never reach the service', async () => {
    const reader = await connected(client(port));
    const results = collect(reader, 'vendgate/svc-test/cmd/#');
    await waitFor(() => reader.connected, { what: 'the reader' });
    const attacker = await connected(client(port));
    let closed = false;
    attacker.on('close', () => {
      closed = true;
    });
    attacker.publish('vendgate/svc-test/cmd/refund', JSON.stringify({ requestId: 'evil-1', orderId: 1 }), { qos: 1 });
    attacker.publish('vendgate/svc-test/cmd/ping', JSON.stringify({ requestId: 'evil-2' }), { qos: 1 });
    await waitFor(() => closed, { what: 'the broker to drop the anonymous publisher' });
    expect(results.filter((line) => line.includes('evil-'))).toEqual([]);
    expect(svc.logs().some((line) => JSON.stringify(line).includes('evil-'))).toBe(false);
  });
});

describe('embedded broker with an operator login (mqtt.username + VENDGATE_MQTT_PASSWORD)', () => {
  let svc: Service;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    svc = await startService({
      config: { mqtt: { url: 'embedded', embeddedPort: port, username: 'operator' } },
      env: { VENDGATE_MQTT_PASSWORD: 'op-secret' },
    });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('the operator login may command the device; a wrong password is refused', async () => {
    const operator = await connected(client(port, { username: 'operator', password: 'op-secret' }));
    // The service connects to its broker after it is ready (setImmediate): a command published before
    // it subscribed is dropped by the broker, so wait for its retained online first.
    const status = collect(operator, 'vendgate/svc-test/status');
    await waitFor(() => status.includes('vendgate/svc-test/status online'), { what: 'the service online on its broker' });
    const results = collect(operator, 'vendgate/svc-test/cmd/ping/result');
    await new Promise<void>((resolve) => operator.subscribe('vendgate/svc-test/cmd/ping/result', { qos: 1 }, () => resolve()));
    operator.publish('vendgate/svc-test/cmd/ping', JSON.stringify({ requestId: 'op-1' }), { qos: 1 });
    await waitFor(() => results.some((line) => line.includes('op-1')), { what: 'the ping result' });

    const intruder = client(port, { username: 'operator', password: 'wrong' });
    let refused = false;
    intruder.on('error', () => {
      refused = true;
    });
    intruder.on('close', () => {
      refused = true;
    });
    await waitFor(() => refused, { what: 'the broker to refuse a wrong password' });
    expect(intruder.connected).toBe(false);
  });
});
