import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createSimulator } from '../../src/simulator/index.js';
import { openDatabase } from '../../src/store/index.js';
import { unusedPort } from '../helpers/service.js';
import { byName, deviceConfig, failing, onCleanup, selftestFor } from './harness.js';
import { waitFor } from '../helpers/wait.js';

/** A healthy stopped device with a database: the baseline every failure below differs from by one thing. */
async function stoppedDevice(config: Record<string, unknown> = {}) {
  const device = await deviceConfig(config);
  openDatabase(device.dbPath).close();
  return device;
}

const GEREGE_ENV = { VENDGATE_PROVIDER_CLIENT_SECRET: 'sim-secret', VENDGATE_WEBHOOK_SECRETS: 'whsec_simulator' };

async function gerege(options: { clientSecret?: string } = {}) {
  const sim = createSimulator({ provider: 'gerege', clientId: 'sim-client', clientSecret: options.clientSecret ?? 'sim-secret' });
  await sim.start();
  onCleanup(() => sim.stop());
  return sim;
}

describe('each broken part FAILs on its own line, with a hint, and leaves the other lines alone', () => {
  it('the baseline stopped device FAILs nothing', async () => {
    const device = await stoppedDevice();
    const { report } = await selftestFor(device.path);
    expect(failing(report.checks)).toEqual([]);
  });

  it('a database file that is not SQLite: FAIL database, says the file is damaged, changes nothing', async () => {
    const device = await stoppedDevice();
    writeFileSync(device.dbPath, 'this is not a database, it was overwritten by a bad copy\n'.repeat(200));
    const before = readFileSync(device.dbPath);

    const { report } = await selftestFor(device.path);
    const line = byName(report.checks).database!;

    expect(failing(report.checks)).toEqual(['database']);
    expect(line.detail).toMatch(/not a database/);
    expect(line.hint).toMatch(/damaged.*vendgate db restore/);
    expect(byName(report.checks).pending).toMatchObject({ status: 'WARN', detail: 'not checked: the database is not available' });
    expect(readFileSync(device.dbPath)).toEqual(before);
    expect(existsSync(`${device.dbPath}-wal`)).toBe(false);
  });

  it('a write-ahead log SQLite would discard: FAIL database, as the start sees it, and the log is left for the start', async () => {
    const device = await stoppedDevice();
    // The card scrambled the log while the service was off: its header no longer holds.
    const walPath = `${device.dbPath}-wal`;
    const garbage = Buffer.alloc(32 + 24 + 1024, 0x5a);
    writeFileSync(walPath, garbage);

    const { report } = await selftestFor(device.path);
    const line = byName(report.checks).database!;
    expect(line.status).toBe('FAIL');
    expect(line.detail).toMatch(/write-ahead log .* unreadable .* SQLite would discard it/);
    expect(line.hint).toMatch(/start the service/);
    // Not opened: the log is still there, byte for byte, for the start to notice, keep and act on.
    expect(readFileSync(walPath)).toEqual(garbage);
  });

  it('an unreachable provider: FAIL provider with where it looked and what to check', async () => {
    const port = await unusedPort();
    const device = await stoppedDevice({ provider: { name: 'gerege', baseUrl: `http://127.0.0.1:${port}`, clientId: 'sim-client' } });

    const started = Date.now();
    const { report } = await selftestFor(device.path, { env: GEREGE_ENV });
    const line = byName(report.checks).provider!;

    expect(failing(report.checks)).toEqual(['provider']);
    expect(line.detail).toContain(`http://127.0.0.1:${port}`);
    expect(line.detail).toMatch(/unreachable.*ECONNREFUSED/);
    expect(line.hint).toMatch(/provider\.baseUrl/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('wrong credentials: FAIL provider naming the secret to fix; the same setup with the right secret PASSes', async () => {
    const sim = await gerege();
    const provider = { name: 'gerege', baseUrl: sim.url, clientId: 'sim-client' };
    const device = await stoppedDevice({ provider });

    const wrong = await selftestFor(device.path, { env: { ...GEREGE_ENV, VENDGATE_PROVIDER_CLIENT_SECRET: 'not-the-secret' } });
    const right = await selftestFor(device.path, { env: GEREGE_ENV });

    expect(failing(wrong.report.checks)).toEqual(['provider']);
    expect(byName(wrong.report.checks).provider!.detail).toMatch(/refused the credentials.*401/);
    expect(byName(wrong.report.checks).provider!.hint).toMatch(/VENDGATE_PROVIDER_CLIENT_SECRET/);
    expect(byName(right.report.checks).provider).toMatchObject({ status: 'PASS' });
    expect(byName(right.report.checks).clock!.detail).toMatch(/within 1 s of the provider's clock/);
    // Proving the credentials never creates an invoice.
    expect(sim.records().createCalls).toEqual([]);
  });

  it('a broker that refuses the connection: FAIL mqtt with the URL and what to check', async () => {
    const port = await unusedPort();
    const device = await stoppedDevice({ mqtt: { url: `mqtt://127.0.0.1:${port}` } });

    const { report } = await selftestFor(device.path);
    const line = byName(report.checks).mqtt!;

    expect(failing(report.checks)).toEqual(['mqtt']);
    expect(line.detail).toBe(`mqtt://127.0.0.1:${port} refused the connection (nothing listening)`);
    expect(line.hint).toMatch(/is the broker running/);
  });

  it('a broker that accepts TCP but never answers MQTT: FAIL mqtt within the time limit', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const silent = createServer((socket) => {
      socket.resume();
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onCleanup(
      () =>
        new Promise((resolve) => {
          for (const s of sockets) s.destroy();
          silent.close(resolve);
        }),
    );
    const port = (silent.address() as { port: number }).port;
    const device = await stoppedDevice({ mqtt: { url: `mqtt://127.0.0.1:${port}`, connectTimeoutMs: 1_000 } });

    const { report } = await selftestFor(device.path, { checkTimeoutMs: 1_000 });

    expect(failing(report.checks)).toEqual(['mqtt']);
    expect(byName(report.checks).mqtt!.detail).toMatch(/no answer within 1000 ms/);
    // The selftest hung up: it leaves no half-open connection behind on the broker.
    await waitFor(() => sockets.size === 0, { timeoutMs: 2_000, what: 'the selftest to close its connection' });
  });

  it('a missing serial device: FAIL serial with the path and how to find the right one', async () => {
    const device = await stoppedDevice({ actuator: { kind: 'serial', serial: { path: '/dev/ttyVENDGATE-missing', profile: 'line' } } });

    const { report } = await selftestFor(device.path);
    const line = byName(report.checks).serial!;

    expect(failing(report.checks)).toEqual(['serial']);
    expect(line.detail).toMatch(/\/dev\/ttyVENDGATE-missing does not exist/);
    expect(line.hint).toMatch(/\/dev\/serial\/by-id/);
    expect(byName(report.checks).actuator).toBeUndefined();
  });

  it('a clock NTP has not synchronised WARNs; one off by more than half the signature tolerance FAILs', async () => {
    const sim = await gerege();
    const device = await stoppedDevice({ provider: { name: 'gerege', baseUrl: sim.url, clientId: 'sim-client', toleranceSec: 300 } });
    const { fakeExec } = await import('./harness.js');

    const unsynced = await selftestFor(device.path, { env: GEREGE_ENV }, { exec: fakeExec({ ntp: 'no' }) });
    const late = await selftestFor(device.path, { env: GEREGE_ENV }, { exec: fakeExec(), clock: { now: () => Date.now() - 400_000 } });

    expect(byName(unsynced.report.checks).clock).toMatchObject({ status: 'WARN' });
    expect(byName(unsynced.report.checks).clock!.hint).toMatch(/timedatectl set-ntp true/);
    expect(failing(late.report.checks)).toEqual(['clock']);
    expect(byName(late.report.checks).clock!.detail).toMatch(
      /^(399|400|401) s behind the provider's clock: signed webhooks are refused beyond 300 s$/,
    );
  });
});
