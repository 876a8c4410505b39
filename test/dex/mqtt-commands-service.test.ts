import { describe, expect, it } from 'vitest';
import { cleanup } from '../helpers/cleanup.js';
import { commandResult, serviceOnBroker } from '../helpers/on-broker.js';
import { cli, order, orderReaches, pay, query } from '../catalog/helpers.js';
import { OPERATOR, signedPayload } from '../helpers/operator.js';
import { readDex } from './dex-reader.js';

/**
 * `cmd/visit` and `cmd/dex` on the compiled service, a child process on a real broker (Mosquitto at
 * 127.0.0.1:1883, or MQTT_TEST_URL), after a customer bought one Water (A1, 1500). The DEX files are
 * read with the tests' own reader (dex-reader.ts), never the writer's code.
 */
const va1 = (text: string) => readDex(text).one('VA1').slice(1).map(Number);

describe('the audit and the service visit over MQTT', () => {
  const defer = cleanup();

  async function deviceWithOneSale() {
    const device = await serviceOnBroker(defer, 'dex', { mqtt: { telemetryIntervalSec: 5 } });
    const { svc, watcher, base } = device;
    const created = await order(svc, 'A1');
    await pay(created.body.payUrl);
    await orderReaches(svc, created.body.orderId, 'vended');
    const send = (name: string, payload: string, requestId: string) => commandResult(device, name, payload, requestId);
    /** The messages on the dex topic, parsed. */
    const dexMessages = () => watcher.on(`${base}/dex`).map((m) => ({ ...JSON.parse(m.payload), retain: m.retain }));
    const events = (type: string) =>
      watcher
        .on(`${base}/events`)
        .map((m) => JSON.parse(m.payload))
        .filter((e) => e.type === type);
    return { ...device, send, dexMessages, events };
  }

  it('cmd/visit records who came and the fills (which set the stock), takes the reset read and publishes service.visit with its DEX; refused bodies and replays change nothing', async () => {
    const { svc, watcher, deviceId, base, send, dexMessages, events } = await deviceWithOneSale();
    const nothingChanged = () => {
      expect(query(svc, 'SELECT count(*) AS n FROM dex_visits')).toEqual([{ n: 0 }]);
      expect(query(svc, 'SELECT count(*) AS n FROM dex_reads')).toEqual([{ n: 0 }]);
      expect(query(svc, 'SELECT vends_reset FROM dex_counters')).toEqual([{ vends_reset: 1 }]);
    };

    // Unsigned: anyone on the broker could zero the interval and set the stock.
    const unsigned = await send('visit', JSON.stringify({ requestId: 'v-free', by: 'Bat', fills: { A1: 12 } }), 'v-free');
    expect(unsigned).toMatchObject({ ok: false, error: { code: 'VG_ERR_COMMAND_UNSIGNED' } });
    // Signed but wrong: every problem named, nothing recorded.
    const bad = await send(
      'visit',
      signedPayload(deviceId, 'visit', { by: '', fills: { A1: -1 }, extra: 1 }, { requestId: 'v-bad' }),
      'v-bad',
    );
    expect(bad).toMatchObject({ ok: false, error: { code: 'VG_ERR_BAD_REQUEST' } });
    expect(bad.error.message).toMatch(/by/);
    expect(bad.error.message).toMatch(/fills\.A1/);
    expect(bad.error.message).toMatch(/extra/);
    const unknownSlot = await send(
      'visit',
      signedPayload(deviceId, 'visit', { by: 'Bat', fills: { Z9: 3 } }, { requestId: 'v-z9' }),
      'v-z9',
    );
    expect(unknownSlot).toMatchObject({ ok: false, error: { code: 'VG_ERR_BAD_REQUEST' } });
    expect(unknownSlot.error.message).toMatch(/Z9: no such slot/);
    nothingChanged();

    const payload = signedPayload(deviceId, 'visit', { by: 'Bat', fills: { A1: 12 } }, { requestId: 'v-1' });
    const done = await send('visit', payload, 'v-1');
    expect(done).toMatchObject({
      ok: true,
      result: { visit: 1, by: 'Bat', fills: { A1: 12 }, dex: { kind: 'visit', paid: { init: { count: 1 }, reset: { count: 1 } } } },
    });
    const visitEvent = await watcher.next(`${base}/events`, (m) => JSON.parse(m.payload).type === 'service.visit', 30_000);
    const visit = JSON.parse(visitEvent.payload);
    expect(visit).toMatchObject({ visit: 1, by: 'Bat', fills: { A1: 12 }, via: `mqtt (key ${OPERATOR.keyId}, request v-1)` });
    expect(readDex(visit.dex).problems).toEqual([]);
    expect(va1(visit.dex)).toEqual([1500, 1, 1500, 1]);
    // The fill set the stock, through the refill code, audited with who and how.
    await watcher.until(() => events('stock.refilled').length > 0, { timeoutMs: 30_000, what: 'the refill event' });
    expect(events('stock.refilled')[0]).toMatchObject({
      slot: 'A1',
      stock: 12,
      by: `visit:Bat via mqtt (key ${OPERATOR.keyId}, request v-1)`,
    });
    // The same read on the dex topic (QoS 1, not retained), kind visit.
    await watcher.until(() => dexMessages().some((m) => m.kind === 'visit'), {
      timeoutMs: 30_000,
      what: 'the visit read on the dex topic',
    });
    const onDex = dexMessages().find((m) => m.kind === 'visit');
    expect(onDex).toMatchObject({ type: 'dex.read', read: 1, retain: false, by: 'Bat' });
    expect(onDex.dex).toBe(visit.dex);
    expect(query(svc, 'SELECT by, fills, read_seq FROM dex_visits')).toEqual([{ by: 'Bat', fills: '{"A1":12}', read_seq: 1 }]);

    // The replay runs nothing: one visit, one read, the interval stays closed.
    expect(await send('visit', payload, 'v-1')).toMatchObject({ ok: true, replay: true });
    expect(query(svc, 'SELECT count(*) AS n FROM dex_visits')).toEqual([{ n: 1 }]);
    expect(query(svc, 'SELECT count(*) AS n FROM dex_reads')).toEqual([{ n: 1 }]);

    // On site, the picklist sees the visit the operator recorded remotely.
    const picklist = await cli(svc, ['picklist', '--json']);
    expect(JSON.parse(picklist.stdout).picklist).toEqual(
      expect.arrayContaining([expect.objectContaining({ selection: 'A1', stock: 12, filledTo: 12, sold: 0, bring: 0 })]),
    );
    // The same rows in telemetry, for an office that plans the round without asking each machine.
    type Row = { selection: string; filledTo: number | null };
    const withVisit = await watcher.next(
      `${base}/telemetry`,
      (m) => (JSON.parse(m.payload).picklist as Row[] | undefined)?.some((row) => row.selection === 'A1' && row.filledTo === 12) ?? false,
      30_000,
    );
    expect(JSON.parse(withVisit.payload).picklist).toEqual(JSON.parse(picklist.stdout).picklist);
  });

  it('cmd/dex publishes a read on the dex topic without resetting, and sends a kept read again byte for byte; bad bodies are refused', async () => {
    const { svc, watcher, send, dexMessages } = await deviceWithOneSale();

    // Read-only: no operator key needed (a VMS collector), never a reset.
    const first = await send('dex', JSON.stringify({ requestId: 'd-1' }), 'd-1');
    expect(first).toMatchObject({ ok: true, result: { read: 1, kind: 'read', paid: { init: { count: 1, value: 1500 } } } });
    await watcher.until(() => dexMessages().length === 1, { timeoutMs: 30_000, what: 'the read on the dex topic' });
    const read1 = dexMessages()[0];
    expect(read1).toMatchObject({ type: 'dex.read', kind: 'read', read: 1, retain: false });
    expect(readDex(read1.dex).problems).toEqual([]);
    expect(va1(read1.dex)).toEqual([1500, 1, 1500, 1]);
    expect(query(svc, 'SELECT vends_reset FROM dex_counters')).toEqual([{ vends_reset: 1 }]);

    // Asked again at once: the same read answers (a flood writes no rows).
    expect(await send('dex', JSON.stringify({ requestId: 'd-2' }), 'd-2')).toMatchObject({ ok: true, result: { read: 1, shared: true } });
    expect(query(svc, 'SELECT count(*) AS n FROM dex_reads')).toEqual([{ n: 1 }]);

    // A collector that missed read 1 asks for it: the same bytes, marked as re-sent.
    const again = await send('dex', JSON.stringify({ requestId: 'd-3', read: 1 }), 'd-3');
    expect(again).toMatchObject({ ok: true, result: { read: 1, kind: 'read', resent: true } });
    await watcher.until(() => dexMessages().length === 2, { timeoutMs: 30_000, what: 'the re-sent read' });
    const resent = dexMessages()[1];
    expect(resent).toMatchObject({ read: 1, kind: 'read', resent: { by: 'mqtt' } });
    expect(resent.dex).toBe(read1.dex);
    expect(query(svc, 'SELECT count(*) AS n FROM dex_reads')).toEqual([{ n: 1 }]);

    const missing = await send('dex', JSON.stringify({ requestId: 'd-4', read: 99 }), 'd-4');
    expect(missing).toMatchObject({ ok: false, error: { code: 'VG_ERR_NOT_FOUND' } });
    expect(missing.error.message).toMatch(/read 99 was never taken/);
    for (const [id, body] of [
      ['d-5', { read: 'last' }],
      ['d-6', { read: 0 }],
      ['d-7', { reset: true }],
    ] as const) {
      const refused = await send('dex', JSON.stringify({ requestId: id, ...body }), id);
      expect(refused).toMatchObject({ ok: false, error: { code: 'VG_ERR_BAD_REQUEST' } });
    }
    expect(query(svc, 'SELECT count(*) AS n FROM dex_reads')).toEqual([{ n: 1 }]);
    expect(dexMessages()).toHaveLength(2);
    expect(query(svc, 'SELECT vends_reset FROM dex_counters')).toEqual([{ vends_reset: 1 }]);
  });
});
