import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/index.js';
import { lastSelftestResult } from '../../src/selftest/index.js';
import { selftestCommand } from '../../src/cli/selftest.js';
import { testBroker } from '../helpers/broker.js';
import { retainedNow } from '../mqtt/watch.js';
import { fakeIo } from '../cli/cli-io.js';
import { deviceConfig, fakeExec, onCleanup } from './harness.js';

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** A device whose service is stopped, with a database it made earlier and a broker operators watch. */
async function stoppedDevice() {
  const broker = await testBroker();
  onCleanup(() => broker.close());
  const device = await deviceConfig({ mqtt: { url: broker.url } });
  openDatabase(device.dbPath).close(); // the database the service created at its last start
  return { ...device, broker };
}

function deviceIdOf(path: string): string {
  return /id: (st-[0-9a-f]+)/.exec(readFileSync(path, 'utf8'))![1]!;
}

describe('selftest on a device whose service is not running', () => {
  it('says so in its first line, and writes nothing to the database and publishes no report', async () => {
    const device = await stoppedDevice();
    const before = sha(device.dbPath);
    const io = fakeIo();
    await selftestCommand({ config: device.path }, io.io, { exec: fakeExec() });

    const firstLine = io.stdout().split('\n')[0]!;
    expect(firstLine).toMatch(/^The service is not running/);
    expect(firstLine).toContain('sudo systemctl start vendgate');
    expect(firstLine).toContain('Nothing was stored or published');
    expect(io.stdout()).not.toMatch(/result stored/);

    expect(sha(device.dbPath)).toBe(before);
    const db = openDatabase(device.dbPath, { readonly: true });
    try {
      expect(lastSelftestResult(db)).toBeNull();
    } finally {
      db.close();
    }
    const base = `vendgate/${deviceIdOf(device.path)}/`;
    const retained = await retainedNow(device.broker.url, `${base}#`);
    expect([...retained.keys()].filter((topic) => !topic.includes('/selftest/peek/'))).toEqual([]);
  });

  it('--record stores and publishes the result all the same, and the first line says that too', async () => {
    const device = await stoppedDevice();
    const io = fakeIo();
    await selftestCommand({ config: device.path, record: true }, io.io, { exec: fakeExec() });
    expect(io.stdout().split('\n')[0]).toMatch(/^The service is not running.*stored and published anyway \(--record\)/);
    const db = openDatabase(device.dbPath, { readonly: true });
    try {
      expect(lastSelftestResult(db)).not.toBeNull();
    } finally {
      db.close();
    }
    const topic = `vendgate/${deviceIdOf(device.path)}/selftest`;
    const retained = await retainedNow(device.broker.url, `vendgate/${deviceIdOf(device.path)}/#`);
    onCleanup(async () => {
      const { connect } = await import('mqtt');
      const client = connect(device.broker.url, { protocolVersion: 4, reconnectPeriod: 0 });
      await new Promise<void>((resolve) => client.once('connect', () => resolve()));
      await client.publishAsync(topic, '', { qos: 1, retain: true });
      await client.endAsync();
    });
    expect(retained.has(topic)).toBe(true);
  });
});
