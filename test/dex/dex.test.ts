import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCore, runnerAnswering, type Core } from '../helpers/core.js';
import { createRetention, openDatabase } from '../../src/store/index.js';
import { createCatalog } from '../../src/catalog/index.js';
import { createOutbox } from '../../src/outbox/index.js';
import { createVisits, dexAuditFor, crc16Arc } from '../../src/dex/index.js';
import { crcArc, readDex } from './dex-reader.js';

/**
 * The EVA-DTS audit from the ledger (src/dex/), read back with the tests' own DEX reader: every
 * counter equals what the ledger says, "since init" never goes backwards, a reset read starts a new
 * interval in the same commit, and a database behind its last read is refused.
 */
let core: Core;
beforeEach(() => {
  core = buildCore();
});
afterEach(() => core.close());

function audit(c: Core = core) {
  const catalog = createCatalog({ db: c.db, clock: c.clock, logger: c.logger, outbox: c.outbox }, c.settings);
  return dexAuditFor(c.settings, { db: c.db, clock: c.clock, outbox: c.outbox, items: () => catalog.current().items });
}

async function sale(slot: string, outcome: 'vended' | 'failed' = 'vended') {
  const order = await core.orders.create({ source: 'kiosk', slot });
  core.fake.set(order.invoice_id!, 'paid');
  await core.observe(order.invoice_id!);
  if (outcome === 'vended') await core.money.vend.run();
  else await failingRunner().run();
  return order;
}

const failingRunner = () => runnerAnswering(core, { result: 'failed', reason: 'motor jammed' });

/** What the ledger itself says: delivered vends per slot (history rows reaching `vended`). */
function ledgerVends(): Map<string, { count: number; value: number }> {
  const rows = core.db
    .prepare(
      `SELECT o.slot AS slot, count(*) AS count, sum(o.amount) AS value FROM orders o
        WHERE EXISTS (SELECT 1 FROM order_history h WHERE h.order_id = o.id AND h.to_state = 'vended') GROUP BY o.slot`,
    )
    .all() as { slot: string; count: number; value: number }[];
  return new Map(rows.map((r) => [r.slot, { count: r.count, value: r.value }]));
}

const num = (field: string | undefined) => Number(field);

describe('the DEX file', () => {
  it('CRC-16/ARC: the catalogue check value of "123456789" is 0xBB3D, in the writer and in the reader', () => {
    const bytes = new TextEncoder().encode('123456789');
    expect(crc16Arc(bytes)).toBe(0xbb3d);
    expect(crcArc(bytes)).toBe(0xbb3d);
    // By hand: "A" is 0x41; CRC-16/ARC of one byte b from 0 is TABLE[b] = 0x30C0 for 0x41.
    expect(crc16Arc(new TextEncoder().encode('A'))).toBe(0x30c0);
  });

  it('is framed, counted and checksummed as EVA-DTS says, with CR LF line ends and the machine and currency', async () => {
    await sale('A1');
    const { text } = audit().read('read', 'test');
    const dex = readDex(text);
    expect(dex.problems).toEqual([]);
    expect(dex.one('ID1')[1]).toBe(core.settings.device.id);
    expect(dex.one('ID4').slice(1)).toEqual(['0', '1496']);
    expect(dex.one('ID5')[1]).toMatch(/^\d{8}$/);
    expect(dex.one('DA1')[1]).toBe('vendgate');
    expect(dex.one('EA3')[1]).toBe('1');
  });

  it('every counter equals the ledger: only delivered vends count, failed ones never, per selection and price', async () => {
    await sale('A1');
    await sale('A1');
    await sale('A2');
    await sale('A2', 'failed');
    await sale('A1', 'failed');
    const dex = readDex(audit().read('read', 'test').text);
    const ledger = ledgerVends();
    const total = [...ledger.values()].reduce((t, v) => ({ count: t.count + v.count, value: t.value + v.value }), { count: 0, value: 0 });
    expect(total.count).toBe(3);
    const va1 = dex.one('VA1');
    expect([num(va1[1]), num(va1[2]), num(va1[3]), num(va1[4])]).toEqual([total.value, total.count, total.value, total.count]);
    expect(dex.one('DA2').slice(1).map(num)).toEqual([total.value, total.count, total.value, total.count]);
    const pa = dex.records.flatMap((r, i) => (r[0] === 'PA1' ? [{ id: r[1]!, pa2: dex.records[i + 1]! }] : []));
    for (const { id, pa2 } of pa) {
      expect(pa2[0]).toBe('PA2');
      const expected = ledger.get(id) ?? { count: 0, value: 0 };
      expect([num(pa2[1]), num(pa2[2]), num(pa2[3]), num(pa2[4])]).toEqual([
        expected.count,
        expected.value,
        expected.count,
        expected.value,
      ]);
    }
    expect(dex.byTag('LA1').map((r) => [r[2], num(r[3]), num(r[4])])).toEqual(
      expect.arrayContaining([
        ['A1', 1500, 2],
        ['A2', 2500, 1],
      ]),
    );
  });

  it('a reset read starts a new interval in the same commit; since init keeps growing', async () => {
    const dexAudit = audit();
    await sale('A1');
    const first = readDex(dexAudit.read('reset', 'test').text);
    expect(first.one('VA1').slice(1).map(num)).toEqual([1500, 1, 1500, 1]);
    await sale('A1');
    await sale('A2');
    const second = readDex(dexAudit.read('read', 'test').text);
    expect(second.one('VA1').slice(1).map(num)).toEqual([5500, 3, 4000, 2]);
    const ea3 = second.one('EA3');
    expect(num(ea3[1])).toBe(2);
    expect(num(ea3.at(-1))).toBe(1);
  });

  it('retention deleting old orders changes no counter', async () => {
    const dexAudit = audit();
    await sale('A1');
    await sale('A2');
    const before = readDex(dexAudit.read('read', 'test').text).one('VA1');
    core.clock.advance(400 * 86_400_000);
    const pruned = createRetention({ db: core.db, clock: core.clock, logger: core.logger }, { retentionDays: 1 }).pruneBatch();
    expect(pruned.orders).toBe(2);
    expect(core.db.prepare('SELECT count(*) AS n FROM orders').get()).toEqual({ n: 0 });
    expect(readDex(dexAudit.read('read', 'test').text).one('VA1')).toEqual(before);
  });

  it('a refund after delivery leaves the vend counted and is reported beside it', async () => {
    const order = await sale('A1');
    core.money.vend.refund(order.id, 'complaint');
    await core.money.refunds.run();
    expect(core.orders.get(order.id)!.state).toBe('refunded');
    const read = audit().read('read', 'test');
    expect(readDex(read.text).one('VA1').slice(1).map(num)).toEqual([1500, 1, 1500, 1]);
    expect(read.header.refundsAfterDelivery.init).toEqual({ count: 1, value: 1500 });
  });

  it('a database behind its last read (a restore) is refused with a reason, until a read after the restore is taken on purpose', async () => {
    const dexAudit = audit();
    await sale('A1');
    const backup = join(core.dir.path, 'backup.db');
    core.db.pragma('wal_checkpoint(TRUNCATE)');
    copyFileSync(core.settings.storage.path, backup);
    await sale('A2');
    dexAudit.read('read', 'test');
    // The card is restored from the backup: one sale and the read are gone from the database.
    core.db.close();
    copyFileSync(backup, core.settings.storage.path);
    const restored = openDatabase(core.settings.storage.path);
    try {
      const outbox = createOutbox({ db: restored, clock: core.clock, deviceId: core.settings.device.id });
      const again = dexAuditFor(core.settings, { db: restored, clock: core.clock, outbox, items: () => [] });
      expect(() => again.read('read', 'test')).toThrow(/VG_ERR_DEX_BEHIND|less than the last audit read/);
      expect(restored.prepare('SELECT count(*) AS n FROM dex_reads').get()).toEqual({ n: 0 });
      const flagged = again.read('read', 'test', { afterRestore: true });
      expect(flagged.header.afterRestore).toMatchObject({ lastRead: 1, paidCount: 2 });
      expect(() => again.read('read', 'test')).not.toThrow();
    } finally {
      restored.close();
      core.db = openDatabase(core.settings.storage.path);
    }
  });
});

describe('the service visit and the picklist', () => {
  it('records who came and what was filled (setting the stock), takes the reset read and sends it with service.visit', async () => {
    const dexAudit = audit();
    const catalog = createCatalog({ db: core.db, clock: core.clock, logger: core.logger, outbox: core.outbox }, core.settings);
    const visits = createVisits({
      db: core.db,
      clock: core.clock,
      outbox: core.outbox,
      audit: dexAudit,
      slots: {
        refill: (slot, count, by) => catalog.slots.refill(slot, count, by),
        stock: (slot) => catalog.slots.get(slot).stock,
        known: (slot) => catalog.item(slot) !== undefined,
      },
    });
    expect(() => visits.record('Bat', { Z9: 3 })).toThrow(/Z9: no such slot/);
    expect(core.db.prepare('SELECT count(*) AS n FROM dex_reads').get()).toEqual({ n: 0 });
    visits.record('Bat', { A1: 10 });
    await sale('A1');
    await sale('A1');
    // Counted at the slot (the service's settle counts down through the catalog, which this core does not wire).
    catalog.slots.refill('A1', 8, 'count');
    expect(visits.picklist().find((r) => r.selection === 'A1')).toMatchObject({ stock: 8, sold: 2, filledTo: 10, bring: 2 });
    const visit = visits.record('Bat', { A1: 10 });
    expect(catalog.slots.get('A1').stock).toBe(10);
    expect(readDex(visit.read.text).one('VA1').slice(1).map(num)).toEqual([3000, 2, 3000, 2]);
    const events = (
      core.db.prepare("SELECT topic, payload FROM outbox WHERE kind = 'event'").all() as { topic: string; payload: string }[]
    ).map((r) => ({ topic: r.topic, ...(JSON.parse(r.payload) as { type: string; dex?: string }) }));
    expect(events.filter((e) => e.type === 'service.visit')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'dex.read').every((e) => e.topic === 'dex' && readDex(e.dex!).problems.length === 0)).toBe(true);
    expect(visits.picklist().find((r) => r.selection === 'A1')).toMatchObject({ sold: 0, bring: 0 });
  });
});
