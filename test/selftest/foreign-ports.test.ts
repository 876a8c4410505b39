import { createServer, type Server } from 'node:http';
import { describe, expect, it } from 'vitest';
import { connect } from 'mqtt';
import { startService, freePort } from '../helpers/service.js';
import { startEmbeddedBroker } from '../../src/mqtt/index.js';
import { runCli } from '../../src/cli/index.js';
import { fakeIo } from '../cli/cli-io.js';
import { byName, onCleanup, uniqueDeviceId } from './harness.js';
import type { SelftestReport } from '../../src/selftest/index.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The demo started beside other programs: something on the settings' local port that answers like a
 * healthy service, and another broker on the settings' embedded broker port. The service runs on
 * ports given at start (VENDGATE_LOCAL_PORT / VENDGATE_BROKER_PORT, the same code as --local-port /
 * --broker-port). The selftest must check that service, and leave the other broker untouched.
 */
async function besideForeignPrograms() {
  const deviceId = uniqueDeviceId();
  // A program on the file's local port, answering every path 200 with a health-like body.
  let foreignRequests = 0;
  const foreignHttp: Server = createServer((_req, res) => {
    foreignRequests++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"checks":{}}');
  });
  const fileLocalPort = await freePort();
  await new Promise<void>((resolve) => foreignHttp.listen(fileLocalPort, '127.0.0.1', () => resolve()));
  onCleanup(() => new Promise<void>((resolve) => foreignHttp.close(() => resolve())));
  // Another broker on the file's embedded port (open, like a stock Mosquitto).
  const fileBrokerPort = await freePort();
  const foreign = await startEmbeddedBroker({ port: fileBrokerPort });
  onCleanup(() => foreign.close());
  const seen: { topic: string; retain: boolean }[] = [];
  const watcher = connect(foreign.url, { protocolVersion: 4, reconnectPeriod: 0 });
  await new Promise<void>((resolve, reject) => {
    watcher.once('connect', () => watcher.subscribe('#', { qos: 1 }, () => resolve()));
    watcher.once('error', reject);
  });
  watcher.on('message', (topic, _payload, packet) => seen.push({ topic, retain: packet.retain }));
  onCleanup(() => watcher.end(true));

  const localPort = await freePort();
  const brokerPort = await freePort();
  const svc = await startService({
    localPort: fileLocalPort,
    config: { device: { id: deviceId }, mqtt: { url: 'embedded', embeddedPort: fileBrokerPort } },
    env: { VENDGATE_LOCAL_PORT: String(localPort), VENDGATE_BROKER_PORT: String(brokerPort) },
  });
  onCleanup(() => svc.stop());
  // The service's broker is up and holds its retained state (it connected to its own broker).
  await svc.waitFor(() => svc.logs().some((l) => l.msg === 'MQTT connected'), { what: 'MQTT connected' });
  /** Everything published on the other broker before now has reached the watcher: a marker after it came back. */
  const drained = async () => {
    const marker = `marker/${Math.random()}`;
    watcher.publish(marker, 'x', { qos: 1 });
    await waitFor(() => seen.some((m) => m.topic === marker), { what: 'the marker' });
  };
  return { deviceId, svc, localPort, brokerPort, fileBrokerPort, seen, drained, foreignRequests: () => foreignRequests };
}

/** `vendgate selftest --json …` as a technician runs it, without the service's port variables. */
async function selftest(args: string[]): Promise<{ code: number; report: SelftestReport; stderr: string }> {
  const { io, stdout, stderr } = fakeIo({ env: {} });
  const code = await runCli(['selftest', '--json', ...args], io);
  return { code, report: JSON.parse(stdout()) as SelftestReport, stderr: stderr() };
}

describe('selftest beside a service started on other ports', () => {
  it('without port options it checks the running service where it listens, and publishes nothing on the other broker', async () => {
    const world = await besideForeignPrograms();
    const { report, stderr } = await selftest(['--config', world.svc.configPath]);
    const checks = byName(report.checks);
    expect(checks['local.listener']!.status, JSON.stringify(checks['local.listener'])).toBe('PASS');
    expect(checks['local.listener']!.detail).toContain(`127.0.0.1:${world.localPort}/healthz`);
    expect(checks.mqtt!.status, JSON.stringify(checks.mqtt)).toBe('PASS');
    expect(checks.mqtt!.detail).toContain(`embedded broker: mqtt://127.0.0.1:${world.brokerPort}`);
    expect(stderr).toContain(`broker port ${world.brokerPort}`);
    expect(world.foreignRequests()).toBe(0);
    await world.drained();
    expect(world.seen.filter((m) => m.topic.includes(world.deviceId))).toEqual([]);
  });

  it('with the same port options as start it checks that instance', async () => {
    const world = await besideForeignPrograms();
    const { report } = await selftest([
      '--config',
      world.svc.configPath,
      '--local-port',
      String(world.localPort),
      '--broker-port',
      String(world.brokerPort),
    ]);
    const checks = byName(report.checks);
    expect(checks['local.listener']!.status).toBe('PASS');
    expect(checks.mqtt!.status, JSON.stringify(checks.mqtt)).toBe('PASS');
    expect(checks.mqtt!.detail).toContain(`127.0.0.1:${world.brokerPort}`);
    expect(world.foreignRequests()).toBe(0);
    await world.drained();
    expect(world.seen.filter((m) => m.topic.includes(world.deviceId))).toEqual([]);
  });

  it('pointed at the other broker it says that broker is not the embedded one, names the right port, and leaves no retained report there', async () => {
    const world = await besideForeignPrograms();
    const { code, report } = await selftest([
      '--config',
      world.svc.configPath,
      '--local-port',
      String(world.localPort),
      '--broker-port',
      String(world.fileBrokerPort),
    ]);
    const mqtt = byName(report.checks).mqtt!;
    expect(mqtt.status).toBe('FAIL');
    expect(mqtt.detail).toContain('not this service');
    expect(mqtt.detail).not.toMatch(/^embedded broker/);
    expect(mqtt.hint).toContain(`--broker-port ${world.brokerPort}`);
    expect(code).toBe(1);
    // Its round-trip probe (not retained) may pass through; a retained report never.
    await world.drained();
    expect(world.seen.filter((m) => m.retain || m.topic.endsWith('/selftest'))).toEqual([]);
  });

  it('the embedded broker shows the id the service noted, so a selftest can tell it from another', async () => {
    const world = await besideForeignPrograms();
    const client = connect(`mqtt://127.0.0.1:${world.brokerPort}`, { protocolVersion: 4, reconnectPeriod: 0 });
    onCleanup(() => client.end(true));
    let id = '';
    client.on('message', (_t, payload) => (id = payload.toString()));
    client.subscribe(`vendgate/${world.deviceId}/broker`);
    await waitFor(() => id !== '', { what: 'the broker id' });
    expect(id).toMatch(/^[0-9a-f]{16}$/);
  });
});
