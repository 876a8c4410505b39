import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { testBroker, type TestBroker } from '../helpers/broker.js';
import { cleanup, closeWatcher, stop } from '../helpers/cleanup.js';
import { watch, type Watcher } from '../mqtt/watch.js';
import { cli, get, order, orderReaches, pay, query } from './helpers.js';
import { commandPayload } from '../helpers/operator.js';

/**
 * The remote catalog over a real broker: Mosquitto when MQTT_TEST_URL names one (CI), else an
 * embedded broker of this test; the compiled service as a child process, an operator's client
 * publishing commands.
 */

const V2 = {
  version: '2026-12-01.1',
  items: [
    { slot: 'A1', name: 'Water', names: { mn: 'Ус', ru: 'Вода' }, price: 1800, lowStockAt: 3 },
    { slot: 'B1', name: 'Juice', price: 3000 },
  ],
};

/** Request ids are unique in the file: a device restarted on the same database remembers every one. */
let requests = 0;

describe('a catalog published over MQTT', () => {
  const defer = cleanup();
  // The latest of each; every one opened in a test is closed after it (newest first).
  let svc: Service | null = null;
  let watcher: Watcher | null = null;
  let broker: TestBroker | null = null;
  beforeEach(() => {
    svc = watcher = broker = null;
  });

  /** `same`: the device, prefix and directory (database) of an earlier run, for a restart with other settings. */
  async function start(config: Record<string, unknown> = {}, same?: { deviceId: string; prefix: string; dir: string }) {
    const deviceId = same?.deviceId ?? `cat-${randomBytes(4).toString('hex')}`;
    const prefix = same?.prefix ?? `vgcat${randomBytes(3).toString('hex')}`;
    const base = `${prefix}/${deviceId}`;
    // One broker per test: a restart with other settings reaches the same one.
    broker ??= defer(await testBroker(), (b) => b.close());
    watcher = defer(await watch(broker.url, [`${base}/#`]), closeWatcher);
    const device = { id: deviceId, ...((config.device as Record<string, unknown> | undefined) ?? {}) };
    svc = defer(
      await startService({ config: { mqtt: { url: broker.url, prefix }, ...config, device }, ...(same ? { dir: same.dir } : {}) }),
      stop,
    );
    await watcher.next(`${base}/status`, (m) => m.payload === 'online', 30_000);
    const command = async (name: string, body: Record<string, unknown>) => {
      const requestId = `${name}-${++requests}`;
      await watcher!.publish(`${base}/cmd/${name}`, commandPayload(deviceId, name, { requestId, ...body }));
      const result = await watcher!.next(`${base}/cmd/${name}/result`, (m) => JSON.parse(m.payload).requestId === requestId, 30_000);
      return JSON.parse(result.payload);
    };
    const applied = (version: string) =>
      watcher!.next(`${base}/catalog`, (m) => m.payload !== '' && JSON.parse(m.payload).version === version, 30_000);
    return { base, deviceId, prefix, command, applied };
  }

  const stateOf = async () => get(`${svc!.localUrl}/api/state`);

  it('changes the price of the next order, not of the one on screen; survives a restart; rolls back in one command', async () => {
    const { command, applied } = await start();
    await applied('settings');
    const onScreen = await order(svc!, 'A1');
    expect(onScreen.status).toBe(201);

    const result = await command('catalog', { catalog: V2 });
    expect(result).toMatchObject({ ok: true, result: { version: V2.version, previousVersion: 'settings', changed: true } });
    const retained = JSON.parse((await applied(V2.version)).payload);
    expect(retained).toMatchObject({
      version: V2.version,
      previousVersion: 'settings',
      source: expect.stringMatching(/^mqtt \(key test-ops, request catalog-\d+\)$/),
      items: V2.items,
    });

    // The order already priced keeps its price, on screen and at the provider.
    const state = await stateOf();
    expect(state.order).toMatchObject({ orderId: onScreen.body.orderId, amount: 1500, state: 'awaiting_payment' });
    expect(state.catalogVersion).toBe(V2.version);
    expect(state.catalog).toEqual([
      expect.objectContaining({ slot: 'A1', price: 1800, names: { mn: 'Ус', ru: 'Вода' }, available: true }),
      expect.objectContaining({ slot: 'B1', price: 3000, available: true }),
    ]);
    await pay(onScreen.body.payUrl);
    await orderReaches(svc!, onScreen.body.orderId, 'vended');
    expect((await get(`${svc!.localUrl}/api/orders/${onScreen.body.orderId}`)).amount).toBe(1500);

    const next = await order(svc!, 'A1');
    expect(next.status).toBe(201);
    expect((await get(`${svc!.localUrl}/api/orders/${next.body.orderId}`)).amount).toBe(1800);
    const gone = await order(svc!, 'A2');
    expect(gone.status).toBe(400);
    expect(gone.body.error.message).toMatch(/unknown slot "A2"; this machine has: A1, B1/);

    // A restart (and an update: the same database) keeps the applied catalog and announces it again.
    await svc!.kill('SIGKILL');
    const announced = watcher!.messages.length;
    await svc!.restart();
    expect((await stateOf()).catalogVersion).toBe(V2.version);
    await watcher!.until(
      () => watcher!.messages.slice(announced).some((m) => m.topic.endsWith('/catalog') && m.payload.includes(V2.version)),
      { timeoutMs: 15_000, what: 'the catalog announced after the restart' },
    );
    const afterRestart = await order(svc!, 'B1');
    expect((await get(`${svc!.localUrl}/api/orders/${afterRestart.body.orderId}`)).amount).toBe(3000);

    const back = await command('catalog_rollback', {});
    expect(back).toMatchObject({ ok: true, result: { version: 'settings', rolledBack: V2.version } });
    await applied('settings');
    expect((await stateOf()).catalog.map((c: { slot: string; price: number }) => [c.slot, c.price])).toEqual([
      ['A1', 1500],
      ['A2', 2500],
    ]);
    const nothingLeft = await command('catalog_rollback', {});
    expect(nothingLeft).toMatchObject({ ok: false, error: { code: 'VG_ERR_CATALOG_INVALID' } });
  });

  it('a broken catalog changes nothing and the result names every problem', async () => {
    const { command, applied } = await start();
    expect((await command('catalog', { catalog: V2 })).ok).toBe(true);
    await applied(V2.version);
    const before = query(svc!, 'SELECT * FROM catalog_versions');
    const broken = {
      version: '2026-12-02.1',
      items: [
        { slot: 'A1', name: '', price: -5 },
        { slot: 'A1', name: 'Again', price: 1.5, names: { de: 'Wasser' } },
        { slot: 'bad slot', name: 'Spaces', price: 100, colour: 'red' },
      ],
    };
    const result = await command('catalog', { catalog: broken });
    expect(result.ok).toBe(false);
    expect(result.error.code).toBe('VG_ERR_CATALOG_INVALID');
    const problems: string[] = result.error.details.problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^items\.0\.name: /),
        expect.stringMatching(/^items\.0\.price: /),
        expect.stringMatching(/^items\.1\.price: /),
        expect.stringMatching(/^items\.1\.names\.de: |^items\.1\.names: /),
        expect.stringMatching(/^items\.2\.slot: letters, digits/),
        expect.stringMatching(/^items\.2: .*colour/),
      ]),
    );
    expect(result.error.message).toMatch(/nothing changed/);
    // Duplicate slots are caught by the same rule as device.catalog once the items themselves are valid.
    const duplicate = await command('catalog', {
      catalog: {
        version: '2026-12-02.2',
        items: [
          { slot: 'A1', name: 'x', price: 1 },
          { slot: 'A1', name: 'y', price: 2 },
        ],
      },
    });
    expect(duplicate.error.details.problems).toEqual(['items.1.slot: slot "A1" appears twice']);
    const noVersion = await command('catalog', { catalog: { items: [] } });
    expect(noVersion.error.details.problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/^version: /), expect.stringMatching(/^items: a catalog needs at least one item/)]),
    );
    const notJson = await command('catalog', {});
    expect(notJson).toMatchObject({ ok: false, error: { code: 'VG_ERR_BAD_REQUEST' } });
    const reused = await command('catalog', { catalog: { ...V2, items: [{ slot: 'A1', name: 'Water', price: 1 }] } });
    expect(reused.error.message).toMatch(/already names another document/);

    expect(query(svc!, 'SELECT * FROM catalog_versions')).toEqual(before);
    expect((await stateOf()).catalogVersion).toBe(V2.version);
    const priced = await order(svc!, 'A1');
    expect((await get(`${svc!.localUrl}/api/orders/${priced.body.orderId}`)).amount).toBe(1800);
    // The same document again is a no-op, not a new version.
    expect(await command('catalog', { catalog: V2 })).toMatchObject({ ok: true, result: { changed: false } });
    expect(query(svc!, 'SELECT count(*) AS n FROM catalog_versions')[0].n).toBe(1);
  });

  it('refill and clear_jam over MQTT; the CLI shows and rolls back the same catalog', async () => {
    const { command } = await start();
    expect(await command('refill', { slot: 'A1', count: 7 })).toMatchObject({ ok: true, result: { slot: 'A1', stock: 7 } });
    expect(await command('refill', { slot: 'Q9', count: 7 })).toMatchObject({ ok: false, error: { code: 'VG_ERR_UNKNOWN_SLOT' } });
    expect(await command('refill', { slot: 'A1', count: -2 })).toMatchObject({ ok: false, error: { code: 'VG_ERR_BAD_REQUEST' } });
    expect(await command('clear_jam', { slot: 'A1' })).toMatchObject({ ok: true, result: { slot: 'A1', wasJammed: false } });
    expect(query(svc!, "SELECT stock FROM slot_state WHERE slot = 'A1'")).toEqual([{ stock: 7 }]);

    expect((await command('catalog', { catalog: V2 })).ok).toBe(true);
    const shown = await cli(svc!, ['catalog']);
    expect(shown.stdout).toMatch(new RegExp(`catalog version ${V2.version.replaceAll('.', '\\.')} \\(mqtt`));
    expect(shown.stdout).toMatch(/A1 {2}1800 {2}Water mn: Ус, ru: Вода/);
    const rolled = await cli(svc!, ['catalog', '--rollback']);
    expect(rolled).toMatchObject({ code: 0 });
    await svc!.waitFor(async () => (await stateOf()).catalogVersion === 'settings', { what: 'the screen on the settings catalog' });
  });

  it('no catalog crosses the local price bounds, a version names one document for ever, every problem is listed', async () => {
    const { command, applied } = await start({ pricing: { floor: 1000, ceiling: 5000, slots: { B1: { ceiling: 3500 } } } });
    await applied('settings');
    const before = query(svc!, 'SELECT * FROM catalog_versions');
    // Every price at 1 (only > 0 was checked): refused, one line per item.
    const cheap = await command('catalog', {
      catalog: {
        version: 'cheap',
        items: [
          { slot: 'A1', name: 'Water', price: 1 },
          { slot: 'B1', name: 'Juice', price: 4000 },
        ],
      },
    });
    expect(cheap).toMatchObject({ ok: false, error: { code: 'VG_ERR_CATALOG_INVALID' } });
    expect(cheap.error.details.problems).toEqual([
      expect.stringMatching(/^items\.0\.price: 1 for slot A1 is below the floor 1000/),
      expect.stringMatching(/^items\.1\.price: 4000 for slot B1 is above the ceiling 3500/),
    ]);
    // A duplicate slot is reported beside another invalid item (it went unreported before).
    const both = await command('catalog', {
      catalog: {
        version: 'dup',
        items: [
          { slot: 'A1', name: 'Water', price: 1500 },
          { slot: 'A1', name: 'Again', price: 1500 },
          { slot: 'B1', name: '', price: 1500 },
        ],
      },
    });
    expect(both.error.details.problems).toEqual(
      expect.arrayContaining(['items.1.slot: slot "A1" appears twice', expect.stringMatching(/^items\.2\.name: /)]),
    );
    expect(query(svc!, 'SELECT * FROM catalog_versions')).toEqual(before);

    // A version rolled back and published again with other prices is refused; so is an old document
    // applied again under its own version.
    const v1 = { version: 'v1', items: [{ slot: 'A1', name: 'Water', price: 1500 }] };
    const v2 = { version: 'v2', items: [{ slot: 'A1', name: 'Water', price: 1800 }] };
    expect((await command('catalog', { catalog: v1 })).ok).toBe(true);
    expect((await command('catalog', { catalog: v2 })).ok).toBe(true);
    expect((await command('catalog_rollback', {})).ok).toBe(true);
    const otherPrices = await command('catalog', { catalog: { ...v2, items: [{ slot: 'A1', name: 'Water', price: 1001 }] } });
    expect(otherPrices.error.message).toMatch(/v2 already names another document/);
    const sameAgain = await command('catalog', { catalog: v2 });
    expect(sameAgain.error.message).toMatch(/v2 was applied at .* and is no longer in use \(rolled back\)/);
    expect((await stateOf()).catalogVersion).toBe('v1');
    expect(await command('catalog', { catalog: v1 })).toMatchObject({ ok: true, result: { changed: false } });
  });

  it('bounds tightened after a catalog was applied: that catalog is not sold (alarm, the settings catalog instead), and a rollback never brings back prices outside them', async () => {
    // Removed after the services on it stopped.
    const dir = defer(mkdtempSync(join(tmpdir(), 'vendgate-bounds-')), (d) => rmSync(d, { recursive: true, force: true }));
    const same = { deviceId: `cat-${randomBytes(4).toString('hex')}`, prefix: `vgcat${randomBytes(3).toString('hex')}`, dir };
    const v1 = { version: 'v1', items: [{ slot: 'A1', name: 'Water', price: 2500 }] };
    const v2 = { version: 'v2', items: [{ slot: 'A1', name: 'Water', price: 1500 }] };
    // Applied in a first run on this database, before any bounds were set.
    const loose = await start({}, same);
    expect((await loose.command('catalog', { catalog: v1 })).ok).toBe(true);
    expect((await loose.command('catalog', { catalog: v2 })).ok).toBe(true);
    await loose.applied('v2');
    await svc!.stop();

    // The operator tightens the bounds; the settings' own catalog is within them.
    const { base, command, applied } = await start(
      { pricing: { floor: 2000, ceiling: 2400 }, device: { catalog: [{ slot: 'A1', name: 'Water', price: 2200 }] } },
      same,
    );
    const alarm = await watcher!.next(`${base}/alarms/catalog_out_of_bounds`, (m) => m.payload !== '', 30_000);
    expect(JSON.parse(alarm.payload)).toMatchObject({
      version: 'v2',
      problems: [expect.stringMatching(/^items\.0\.price: 1500 for slot A1 is below the floor 2000/)],
    });
    expect(JSON.parse((await applied('settings')).payload).items).toEqual([{ slot: 'A1', name: 'Water', price: 2200 }]);
    const state = await stateOf();
    expect(state.catalogVersion).toBe('settings');
    expect(state.catalog).toEqual([expect.objectContaining({ slot: 'A1', price: 2200 })]);
    const priced = await order(svc!, 'A1');
    expect((await get(`${svc!.localUrl}/api/orders/${priced.body.orderId}`)).amount).toBe(2200);

    // Rolling v2 back would bring back v1 (2500, above the new ceiling): refused, nothing changed.
    const versions = query(svc!, 'SELECT * FROM catalog_versions');
    const rollback = await command('catalog_rollback', {});
    expect(rollback).toMatchObject({ ok: false, error: { code: 'VG_ERR_CATALOG_INVALID' } });
    expect(rollback.error.details.problems).toEqual([
      expect.stringMatching(/^rollback: version v1 crosses the local price bounds/),
      expect.stringMatching(/^items\.0\.price: 2500 for slot A1 is above the ceiling 2400/),
    ]);
    expect(query(svc!, 'SELECT * FROM catalog_versions')).toEqual(versions);
    expect((await stateOf()).catalogVersion).toBe('settings');

    // A catalog within the bounds is sold again and the alarm closes.
    expect((await command('catalog', { catalog: { version: 'v3', items: [{ slot: 'A1', name: 'Water', price: 2300 }] } })).ok).toBe(true);
    await watcher!.next(`${base}/alarms/catalog_out_of_bounds`, (m) => m.payload === '', 30_000);
    expect((await stateOf()).catalogVersion).toBe('v3');
  });
});
