import { describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { pino } from 'pino';
import { inTransaction } from '../../src/store/index.js';
import { createOutbox } from '../../src/outbox/index.js';
import { systemClock } from '../../src/util/index.js';
import { checkDiskAlarm, readSystem } from '../../src/mqtt/telemetry.js';
import { broker, createDevice, tempDatabase, watching } from './harness.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('telemetry', () => {
  it('is published on connect with the app values plus outbox depth, memory and free disk', async () => {
    const { url } = await broker();
    const device = createDevice(url);
    inTransaction(device.db, () => device.outbox.raiseAlarm('clock_skew', 'warning', 'clock is off'));
    const watcher = await watching(url, [`${device.base}/telemetry`]);
    await device.mqtt.start();
    const telemetry = JSON.parse((await watcher.next(`${device.base}/telemetry`)).payload) as Record<string, any>;
    expect(telemetry).toMatchObject({
      deviceId: device.deviceId,
      uptimeSec: 42,
      counters: { orders_created: 3 },
      lastPollAt: null,
      openAlarms: ['clock_skew'],
    });
    expect(telemetry.outboxDepth).toBeTypeOf('number');
    expect(telemetry.memory.rssBytes).toBeGreaterThan(0);
    expect(telemetry.disk.freeBytes).toBeGreaterThan(0);
    expect(telemetry.mqttConnectedSince).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(telemetry.cpuTempC === null || typeof telemetry.cpuTempC === 'number').toBe(true);
    // Which release runs there: a fleet view finds the devices an update missed.
    expect(telemetry.version).toBe(PACKAGE_VERSION);
    expect(telemetry.node).toBe(process.version);
    expect(telemetry.commit).toMatch(/^([0-9a-f]{7,}(-dirty)?|unknown)$/);
  });

  it('reads the CPU temperature in degrees from the thermal zone, and null where there is none', async () => {
    const { dir } = tempDatabase();
    writeFileSync(`${dir}/temp`, '48312\n');
    expect((await readSystem({ thermalPath: `${dir}/temp` })).cpuTempC).toBe(48.3);
    expect((await readSystem({ thermalPath: `${dir}/missing` })).cpuTempC).toBeNull();
  });

  it('opens disk_low below the threshold once, and clears it only above 110 % of it', () => {
    const { db } = tempDatabase();
    const outbox = createOutbox({ db, clock: systemClock, deviceId: 'dev-1' });
    const deps = { outbox, logger: pino({ level: 'silent' }), transaction: <T>(fn: () => T) => inTransaction(db, fn) };
    const mb = 1024 * 1024;
    const disk = (freeMb: number) => ({ freeBytes: freeMb * mb, totalBytes: 1000 * mb });

    expect(checkDiskAlarm(deps, disk(150), 200 * mb)).toBe(true);
    expect(checkDiskAlarm(deps, disk(140), 200 * mb)).toBe(false);
    expect(checkDiskAlarm(deps, disk(210), 200 * mb)).toBe(false);
    expect(outbox.openAlarms().map((a) => a.name)).toEqual(['disk_low']);
    expect(checkDiskAlarm(deps, disk(230), 200 * mb)).toBe(true);
    expect(outbox.openAlarms()).toEqual([]);
    expect(outbox.pending(10).map((r) => [r.topic, r.payload === '' ? 'clear' : 'raise'])).toEqual([
      ['alarms/disk_low', 'raise'],
      ['alarms/disk_low', 'clear'],
    ]);
  });

  // 100 TB: more than any disk this test runs on has free.
  it('raises disk_low from the device when the free space is under mqtt.diskLowFreeMb', async () => {
    const { url } = await broker();
    const device = createDevice(url, { diskLowFreeMb: 100_000_000 });
    const watcher = await watching(url, [`${device.base}/alarms/#`]);
    await device.mqtt.start();
    const alarm = await watcher.next(`${device.base}/alarms/disk_low`);
    expect(JSON.parse(alarm.payload)).toMatchObject({ name: 'disk_low', severity: 'warning' });
  });
});
