import { describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/store/index.js';
import { TOPIC_PAYLOADS } from '../../src/mqtt/topic-payloads.js';
import { createCatalog } from '../../src/catalog/index.js';
import { createOutbox } from '../../src/outbox/index.js';
import { openDatabase } from '../../src/store/index.js';
import { createManualClock, silentLogger } from '../../src/util/index.js';
import { parseSettings } from '../../src/settings/index.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { broker, createDevice, watching } from './harness.js';

/**
 * The payloads of `state`, `telemetry`, `alarms/<name>`, `catalog` and `selftest` as a device publishes them are exactly what
 * TOPIC_PAYLOADS (and so docs/reference.md and docs/mqtt-events.schema.json) say: every field declared
 * (nothing is stripped by the parse), every declared type held.
 */
describe('the payloads of the device topics', () => {
  it('state, telemetry, an alarm and a selftest report each parse to themselves under their schema', async () => {
    const { url } = await broker();
    const device = createDevice(url);
    inTransaction(device.db, () => device.outbox.raiseAlarm('clock_skew', 'warning', 'clock is off', { skewSec: 120 }));
    const watcher = await watching(url, [
      `${device.base}/state`,
      `${device.base}/telemetry`,
      `${device.base}/alarms/#`,
      `${device.base}/selftest`,
    ]);
    await device.mqtt.start();
    const payload = async (topic: string) => JSON.parse((await watcher.next(`${device.base}/${topic}`)).payload) as unknown;

    const state = await payload('state');
    expect(TOPIC_PAYLOADS.state.schema.parse(state)).toEqual(state);
    const telemetry = await payload('telemetry');
    expect(TOPIC_PAYLOADS.telemetry.schema.parse(telemetry)).toEqual(telemetry);
    const alarm = await payload('alarms/clock_skew');
    expect(TOPIC_PAYLOADS.alarm.schema.parse(alarm)).toEqual(alarm);
    expect(alarm).toMatchObject({ name: 'clock_skew', severity: 'warning', deviceId: device.deviceId, skewSec: 120 });
    device.mqtt.publishSelftest({ ok: true, checks: [] });
    const selftest = await payload('selftest');
    expect(TOPIC_PAYLOADS.selftest.schema.parse(selftest)).toEqual(selftest);
    expect(selftest).toMatchObject({ report: { ok: true, checks: [] } });
  });

  it('the retained catalog, as applied and as rolled back to the settings, parses to itself', () => {
    const dir = tempDir();
    const settings = parseSettings({ ...testSettings(dir.path), slots: {} });
    const db = openDatabase(settings.storage.path);
    try {
      const outbox = createOutbox({ db, clock: createManualClock(), deviceId: settings.device.id });
      const catalog = createCatalog({ db, clock: createManualClock(), logger: silentLogger(), outbox }, settings);
      catalog.apply({ version: '7', items: [{ slot: 'A1', name: 'Water', price: 700 }] }, 'test');
      catalog.rollback('test');
      const rows = db.prepare("SELECT payload FROM outbox WHERE topic = 'catalog' ORDER BY seq").all() as { payload: string }[];
      expect(rows.map((row) => (JSON.parse(row.payload) as { version: string }).version)).toEqual(['7', 'settings']);
      for (const row of rows) {
        const payload = JSON.parse(row.payload) as unknown;
        expect(TOPIC_PAYLOADS.catalog.schema.parse(payload)).toEqual(payload);
      }
    } finally {
      db.close();
      dir.cleanup();
    }
  });

  it('a state or telemetry field the schema does not declare is told, not passed over', () => {
    const state = { mode: 'vending', phase: 'idle', orderId: null, reference: null, since: '2026-12-05T21:00:00.000Z', dbId: 'db1' };
    expect(TOPIC_PAYLOADS.state.schema.parse(state)).toEqual(state);
    expect(TOPIC_PAYLOADS.state.schema.parse({ ...state, surprise: 1 })).not.toEqual({ ...state, surprise: 1 });
    expect(TOPIC_PAYLOADS.state.schema.safeParse({ ...state, mode: 'teleport' }).success).toBe(false);
  });
});
