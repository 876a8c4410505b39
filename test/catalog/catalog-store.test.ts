import { afterEach, describe, expect, it } from 'vitest';
import { createCatalog } from '../../src/catalog/index.js';
import { createOutbox } from '../../src/outbox/index.js';
import { openDatabase, type Db } from '../../src/store/index.js';
import { createManualClock, silentLogger } from '../../src/util/index.js';
import { parseSettings } from '../../src/settings/index.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';

/** The catalog module on a real SQLite file: the rules the black-box tests rely on, case by case. */
describe('catalog, stock and jam rules', () => {
  let db: Db | null = null;
  let dir: ReturnType<typeof tempDir> | null = null;
  afterEach(() => {
    db?.close();
    db = null;
    dir?.cleanup();
    dir = null;
  });

  function build(overrides: Parameters<typeof testSettings>[1] & { slots?: Record<string, number> } = {}) {
    dir = tempDir();
    const { slots, ...rest } = overrides;
    const settings = parseSettings({ ...testSettings(dir.path, rest), slots: slots ?? {} });
    db = openDatabase(settings.storage.path);
    const clock = createManualClock();
    const outbox = createOutbox({ db, clock, deviceId: settings.device.id });
    const catalog = createCatalog({ db, clock, logger: silentLogger(), outbox }, settings);
    const alarms = () => outbox.openAlarms().map((a) => a.name);
    const retained = () =>
      (db!.prepare("SELECT payload FROM outbox WHERE topic = 'catalog' ORDER BY seq").all() as { payload: string }[]).map(
        (r) => JSON.parse(r.payload).version,
      );
    return { catalog, outbox, clock, alarms, retained };
  }

  it('failures count in a row: a delivered vend starts the count again', () => {
    const { catalog, alarms } = build({ slots: { jamAfterFailures: 3 } });
    catalog.slots.failed('A1', 'jam');
    catalog.slots.failed('A1', 'jam');
    catalog.slots.delivered('A1');
    catalog.slots.failed('A1', 'jam');
    catalog.slots.failed('A1', 'jam');
    expect(catalog.slots.get('A1')).toMatchObject({ jammed: false, consecutiveFailures: 2 });
    catalog.slots.failed('A1', 'motor stalled');
    expect(catalog.slots.get('A1')).toMatchObject({ jammed: true, jamReason: 'motor stalled' });
    expect(alarms()).toEqual(['slot_jammed/A1']);
    expect(() => catalog.forSale('A1')).toThrow(expect.objectContaining({ code: 'VG_ERR_SLOT_JAMMED', httpStatus: 409 }));
    expect(catalog.forSale('A2')).toMatchObject({ slot: 'A2', price: 2500 });
    expect(catalog.slots.clearJam('A1', 'test')).toMatchObject({ jammed: false, consecutiveFailures: 0, wasJammed: true });
    expect(alarms()).toEqual([]);
  });

  it('the low-stock alarm follows the item threshold, then the default; an uncounted slot never alarms', () => {
    const { catalog, alarms } = build({
      device: {
        catalog: [
          { slot: 'A1', name: 'Water', price: 1500, lowStockAt: 5 },
          { slot: 'A2', name: 'Cola', price: 2500 },
        ],
      },
      slots: { lowStockAt: 1 },
    });
    catalog.slots.refill('A1', 6, 'test');
    catalog.slots.refill('A2', 2, 'test');
    expect(alarms()).toEqual([]);
    catalog.slots.delivered('A1');
    catalog.slots.delivered('A2');
    expect(alarms().sort()).toEqual(['stock_low/A1', 'stock_low/A2']);
    catalog.slots.refill('A1', 20, 'test');
    expect(alarms()).toEqual(['stock_low/A2']);
    catalog.slots.delivered('A2');
    expect(catalog.slots.get('A2').stock).toBe(0);
    catalog.slots.delivered('A2');
    expect(catalog.slots.get('A2').stock).toBe(0);
  });

  it('rollback walks back one version at a time, down to the settings, and each step is announced retained', () => {
    const { catalog, retained } = build();
    const doc = (version: string, price: number) => ({ version, items: [{ slot: 'A1', name: 'Water', price }] });
    catalog.apply(doc('1', 100), 'test');
    catalog.apply(doc('2', 200), 'test');
    expect(catalog.forSale('A1').price).toBe(200);
    expect(catalog.rollback('test')).toEqual({ version: '1', rolledBack: '2' });
    expect(catalog.forSale('A1').price).toBe(100);
    expect(catalog.rollback('test')).toEqual({ version: 'settings', rolledBack: '1' });
    expect(catalog.forSale('A1').price).toBe(1500);
    expect(() => catalog.rollback('test')).toThrow(/nothing to roll back/);
    expect(retained()).toEqual(['1', '2', '1', 'settings']);
    // A version number is accepted and kept as text; "settings" is reserved.
    expect(catalog.apply({ version: 7, items: [{ slot: 'A1', name: 'Water', price: 700 }] }, 'test')).toMatchObject({
      version: '7',
      changed: true,
    });
    expect(() => catalog.apply(doc('settings', 1), 'test')).toThrow(/names the catalog in the device's settings/);
  });

  it('a catalog that drops a slot keeps that slot’s stock row, and the slot is simply not for sale', () => {
    const { catalog } = build();
    catalog.slots.refill('A2', 4, 'test');
    catalog.apply({ version: 'x', items: [{ slot: 'A1', name: 'Water', price: 1 }] }, 'test');
    expect(() => catalog.forSale('A2')).toThrow(expect.objectContaining({ code: 'VG_ERR_UNKNOWN_SLOT' }));
    expect(() => catalog.slots.refill('A2', 1, 'test')).toThrow(/not in the catalog in use/);
    catalog.rollback('test');
    expect(catalog.slots.get('A2').stock).toBe(4);
  });
});

describe('stock where operators look: telemetry, metrics and Home Assistant', () => {
  it('telemetry and /metrics carry each slot’s stock and the catalog version; discovery has a stock sensor per slot', async () => {
    const { createApp } = await import('../../src/app.js');
    const { discoveryMessages } = await import('../../src/mqtt/home-assistant.js');
    const { createTopics } = await import('../../src/mqtt/index.js');
    const dir = tempDir();
    const app = createApp(testSettings(dir.path), { logger: silentLogger() });
    try {
      const { localUrl } = await app.start();
      const ctx = app.context();
      ctx.catalog.slots.refill('A1', 9, 'test');
      expect(ctx.view.telemetry()).toMatchObject({ catalogVersion: 'settings', stock: { A1: 9, A2: null }, jammedSlots: [] });
      const metrics = await (await fetch(`${localUrl}/metrics`)).text();
      expect(metrics).toMatch(/^vendgate_slot_stock\{slot="A1"\} 9$/m);
      expect(metrics).not.toMatch(/vendgate_slot_stock\{slot="A2"\}/);
      const topics = createTopics('vendgate', 'vm-test');
      const sensors = discoveryMessages({
        discoveryPrefix: 'homeassistant',
        deviceId: 'vm-test',
        mode: 'vending',
        topics,
        slots: ['A1', 'A2'],
      });
      const stockA1 = sensors.find((s) => s.topic === 'homeassistant/sensor/vm-test_stock_A1/config');
      expect(JSON.parse(stockA1!.payload)).toMatchObject({
        state_topic: 'vendgate/vm-test/telemetry',
        value_template: "{{ value_json.stock['A1'] }}",
      });
      expect(sensors.some((s) => s.topic.endsWith('vm-test_catalog_version/config'))).toBe(true);
    } finally {
      await app.stop();
      dir.cleanup();
    }
  });
});
