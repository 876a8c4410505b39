import { describe, expect, it } from 'vitest';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Aedes, type AedesOptions } from 'aedes';
import { startEmbeddedBroker } from '../../src/mqtt/index.js';
import { mqttSchema } from '../../src/settings/sections/mqtt.js';
import { captureLogger, createDevice, onCleanup, watching } from './harness.js';
import { retainedNow } from './watch.js';
import { freePort, unusedPort } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';

const TLS = (name: string) => fileURLToPath(new URL(`./fixtures/tls/${name}`, import.meta.url));

/** An aedes broker with its own options (credentials) on a TCP or TLS listener; records client ids that got in. */
async function customBroker(options: AedesOptions, tls?: Parameters<typeof createTlsServer>[0]) {
  const aedes = await Aedes.createBroker(options);
  const admitted: string[] = [];
  aedes.on('clientReady', (client) => admitted.push(client.id));
  aedes.on('clientError', () => {});
  aedes.on('connectionError', () => {});
  const server: Server = tls ? createTlsServer(tls, (socket) => aedes.handle(socket)) : createTcpServer((socket) => aedes.handle(socket));
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  onCleanup(async () => {
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, admitted };
}

describe('connection', () => {
  it('an empty mqtt.url disables MQTT: start and stop do nothing', async () => {
    const log = captureLogger();
    const device = createDevice('', {}, { logger: log.logger });
    await device.mqtt.start();
    device.write(3);
    device.mqtt.publishSelftest({ ok: true });
    expect(device.mqtt.connected()).toBe(false);
    await device.mqtt.stop();
    expect(device.outbox.depth()).toBe(3);
    expect(log.text()).toContain('MQTT disabled');
  });

  it('start() returns at once when the broker is unreachable, and the device connects when it appears', async () => {
    const port = await unusedPort();
    const device = createDevice(`mqtt://127.0.0.1:${port}`);
    await device.mqtt.start();
    expect(device.mqtt.connected()).toBe(false);
    const broker = await startEmbeddedBroker({ port });
    onCleanup(() => broker.close());
    await waitFor(() => device.mqtt.connected(), { what: 'the device to connect once the broker is up' });
  });

  it('url embedded starts an in-process broker on embeddedPort and closes it on stop', async () => {
    const port = await freePort();
    const device = createDevice('embedded', { embeddedPort: port });
    await device.mqtt.start();
    await waitFor(() => device.mqtt.connected(), { what: 'the device to connect to its embedded broker' });
    const url = `mqtt://127.0.0.1:${port}`;
    expect((await retainedNow(url, `${device.base}/#`)).get(`${device.base}/status`)).toBe('online');
    await device.mqtt.stop();
    // The port is free again: nothing is left listening.
    const again = await startEmbeddedBroker({ port });
    await again.close();
  });

  it('url embedded with the port already taken by another broker: runs without MQTT, says so, and never connects there', async () => {
    const existing = await startEmbeddedBroker({ port: 0 });
    onCleanup(() => existing.close());
    const log = captureLogger();
    const device = createDevice('embedded', { embeddedPort: existing.port }, { logger: log.logger });
    const watcher = await watching(existing.url, [`${device.base}/#`]);
    await device.mqtt.start();
    await waitFor(() => log.text().includes('MQTT off'), { what: 'the one line that says MQTT is off' });
    expect(device.mqtt.connected()).toBe(false);
    // Nothing of the device reached the broker that holds the port: a marker published after it
    // comes back, and it is all the watcher saw.
    await watcher.publish(`${device.base}/selftest/marker`, 'x');
    await watcher.next(`${device.base}/selftest/marker`);
    expect(watcher.messages.map((m) => m.topic)).toEqual([`${device.base}/selftest/marker`]);
  });

  it('logs in with username and password, and never logs the password', async () => {
    const password = 's3cret-Pa55word';
    const check: AedesOptions['authenticate'] = (_client, username, pass, done) => {
      if (username === 'device' && pass?.toString() === password) return done(null, true);
      return done(Object.assign(new Error('bad credentials'), { returnCode: 4 }), null);
    };
    const broker = await customBroker({ authenticate: check });
    const url = `mqtt://127.0.0.1:${broker.port}`;

    const good = captureLogger();
    const device = createDevice(url, { username: 'device', password }, { logger: good.logger });
    await device.mqtt.start();
    await waitFor(() => device.mqtt.connected(), { what: 'the device to log in' });
    expect(broker.admitted).toEqual([`${device.prefix}-${device.deviceId}`]);

    const bad = captureLogger();
    const intruder = createDevice(url, { username: 'device', password: `${password}-wrong` }, { logger: bad.logger });
    await intruder.mqtt.start();
    await waitFor(() => bad.text().includes('refused the credentials'), { what: 'the refusal to be logged' });
    expect(intruder.mqtt.connected()).toBe(false);

    await device.mqtt.stop();
    await intruder.mqtt.stop();
    for (const text of [good.text(), bad.text()]) expect(text).not.toContain(password);
  });

  it('credentials in the URL win over mqtt.username / password (as mqtt.connect does), and stay out of the log', async () => {
    const check: AedesOptions['authenticate'] = (_client, username, pass, done) => {
      if (username === 'url-user' && pass?.toString() === 'p@ss word') return done(null, true);
      return done(Object.assign(new Error('bad credentials'), { returnCode: 4 }), null);
    };
    const broker = await customBroker({ authenticate: check });
    const log = captureLogger();
    const device = createDevice(
      `mqtt://url-user:${encodeURIComponent('p@ss word')}@127.0.0.1:${broker.port}`,
      { username: 'device', password: 'not-this-one' },
      { logger: log.logger },
    );
    await device.mqtt.start();
    await waitFor(() => device.mqtt.connected(), { what: 'the device to log in with the URL credentials' });
    expect(broker.admitted).toEqual([`${device.prefix}-${device.deviceId}`]);
    await device.mqtt.stop();
    expect(log.text()).not.toContain('p%40ss');
  });

  it('connects over TLS with the CA from caPath and a client certificate', async () => {
    const broker = await customBroker(
      {},
      {
        key: readFileSync(TLS('server.key')),
        cert: readFileSync(TLS('server.pem')),
        ca: readFileSync(TLS('ca.pem')),
        requestCert: true,
        rejectUnauthorized: true,
      },
    );
    const device = createDevice(`mqtts://localhost:${broker.port}`, {
      caPath: TLS('ca.pem'),
      certPath: TLS('client.pem'),
      keyPath: TLS('client.key'),
    });
    await device.mqtt.start();
    await waitFor(() => device.mqtt.connected(), { what: 'the TLS connection' });
    expect(broker.admitted).toHaveLength(1);
  });

  it('refuses a broker certificate it cannot verify, and keeps the service running', async () => {
    const broker = await customBroker({}, { key: readFileSync(TLS('server.key')), cert: readFileSync(TLS('server.pem')) });
    const log = captureLogger();
    const device = createDevice(`mqtts://localhost:${broker.port}`, {}, { logger: log.logger });
    await device.mqtt.start();
    await waitFor(() => log.text().includes('MQTT connection error'), { what: 'the TLS failure to be logged' });
    expect(device.mqtt.connected()).toBe(false);
    expect(broker.admitted).toEqual([]);
  });

  it('a TLS file that cannot be read is logged with its path and MQTT stays off, without throwing', async () => {
    const log = captureLogger();
    const device = createDevice('mqtts://localhost:8883', { caPath: '/nonexistent/ca.pem' }, { logger: log.logger });
    await device.mqtt.start();
    expect(log.text()).toContain('mqtt.caPath: cannot read /nonexistent/ca.pem (ENOENT)');
    expect(device.mqtt.connected()).toBe(false);
  });
  // The reconnect backoff (full jitter) is tested in reconnect.test.ts.
});

describe('mqtt settings', () => {
  const problems = (input: Record<string, unknown>) => {
    const result = mqttSchema().safeParse(input);
    return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('accepts the defaults: the embedded broker, prefix vendgate, remote vend off', () => {
    expect(mqttSchema().parse({})).toMatchObject({
      url: 'embedded',
      prefix: 'vendgate',
      allowRemoteVend: false,
      rejectUnauthorized: true,
      homeAssistant: false,
    });
  });

  it('names each mistake: a URL that is not a broker, a certificate without its key, TLS files on a plain URL', () => {
    expect(problems({ url: 'localhost:1883' })[0]).toContain("'embedded', or a broker URL");
    expect(problems({ url: 'mqtts://b:8883', certPath: '/c.pem' })).toEqual([
      'keyPath: certPath and keyPath go together (client certificate and its key)',
    ]);
    expect(problems({ url: 'mqtt://b:1883', caPath: '/ca.pem' })).toEqual(['caPath: TLS files need a TLS url (mqtts://host:8883)']);
    expect(problems({ password: 'x' })).toEqual(['username: a password (VENDGATE_MQTT_PASSWORD) needs mqtt.username']);
    expect(problems({ prefix: 'a/b' })).toEqual(['prefix: no /, # or +']);
  });
});
