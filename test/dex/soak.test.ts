import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCore, composeMoneyPath, type Core, type CoreNode } from '../helpers/core.js';
import { createRetention, observeDurableCommits } from '../../src/store/index.js';
import { createCatalog } from '../../src/catalog/index.js';
import { observationOf } from '../../src/ledger/index.js';
import type { Actuator } from '../../src/hardware/index.js';
import { createVisits, dexAuditFor, type DexAudit } from '../../src/dex/index.js';
import { readDex } from './dex-reader.js';

/**
 * A seeded run of mixed sales against the audit: delivered and failed vends, refunds after delivery,
 * retention, a catalog change, two visits, a power cut while the motor turns and a restore from a
 * backup. After every read, "since init" has not gone backwards, it equals the delivered vends (count
 * and value), the refunds after delivery equal the ledger's, and the reset intervals add up to the
 * whole. DEX_SOAK_SALES=10000 for the long run (the default is sized for CI).
 *
 * The power cut is modelled in-process as the property world does (test/techniques/property/world.ts):
 * the card keeps the database as it was at its last sync, a durable commit; here the cut comes right
 * after the vend was claimed, while the motor turned, so the delivery is on the machine and not in the
 * database. test/techniques/power-cut/dex-power-cut.test.ts cuts the real service on a real file system.
 */
const SALES = Number(process.env.DEX_SOAK_SALES ?? 300);

let core: Core;
beforeEach(() => {
  core = buildCore();
});
afterEach(() => {
  observeDurableCommits(null);
  core.close();
});

function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('the audit under a seeded mix of sales', () => {
  it(`${SALES} sales with a power cut mid-vend and a restore: since init never goes backwards, equals the delivered vends, and the intervals add up`, async () => {
    const rand = random(7);
    const { settings, clock, logger, fake } = core;
    // The machine: delivers, or jams when the script says so.
    let jam = false;
    const machine: Actuator = {
      kind: 'sim',
      async start() {},
      async stop() {},
      health: () => ({ ok: true, detail: 'soak machine' }),
      fire: async () => (jam ? { result: 'failed', reason: 'jam' } : { result: 'vended' }),
    };
    core.db.close();
    const catalog = () => createCatalog({ db: node.db, clock, logger, outbox: node.outbox }, settings);
    const boot = (): { node: CoreNode; audit: DexAudit } => {
      const booted = composeMoneyPath({ settings, clock, logger, provider: fake.provider, actuator: machine });
      core.db = booted.db;
      return {
        node: booted,
        audit: dexAuditFor(settings, { db: booted.db, clock, outbox: booted.outbox, items: () => catalog().current().items }),
      };
    };
    let { node, audit } = boot();

    const delivered = { count: 0, value: 0 };
    const refundedAfter = { count: 0, value: 0 };
    let lastInit = { count: 0, value: 0 };
    // Vends counted in the intervals closed so far (each visit's reset read closes one).
    const closed = { count: 0, value: 0 };
    let reads = 0;
    const take = (
      read: { text: string; header: { refundsAfterDelivery: { init: { count: number; value: number } } } },
      closes: boolean,
    ) => {
      reads += 1;
      const dex = readDex(read.text);
      expect(dex.problems).toEqual([]);
      const [value, count, valueReset, countReset] = dex.one('VA1').slice(1).map(Number) as [number, number, number, number];
      expect(count).toBeGreaterThanOrEqual(lastInit.count);
      expect(value).toBeGreaterThanOrEqual(lastInit.value);
      expect({ count, value }).toEqual(delivered);
      expect({ count: closed.count + countReset, value: closed.value + valueReset }).toEqual({ count, value });
      expect(read.header.refundsAfterDelivery.init).toEqual(refundedAfter);
      // PA2 per selection adds up to VA1.
      const pa2 = dex.byTag('PA2').map((r) => r.slice(1).map(Number));
      expect(pa2.reduce((n, r) => n + (r[0] ?? 0), 0)).toBe(count);
      expect(pa2.reduce((n, r) => n + (r[1] ?? 0), 0)).toBe(value);
      expect(Number(dex.one('EA3')[1])).toBe(reads);
      lastInit = { count, value };
      if (closes) {
        closed.count += countReset;
        closed.value += valueReset;
      }
    };
    const check = () => take(audit.read('read', 'soak'), false);
    const visit = () => {
      const visits = createVisits({
        db: node.db,
        clock,
        outbox: node.outbox,
        audit,
        slots: { refill: () => {}, stock: () => null, known: () => true },
      });
      take(visits.record('soak', {}).read, true);
    };
    const sell = async () => {
      const slot = rand() < 0.5 ? 'A1' : 'A2';
      const order = await node.money.orders.create({ source: 'kiosk', slot });
      fake.set(order.invoice_id!, 'paid');
      node.money.ledger.observe(observationOf(await fake.provider.getInvoice(order.invoice_id!), 'poll'));
      return order;
    };

    let backup: string | null = null;
    let cuts = 0;
    let failed = 0;
    for (let i = 1; i <= SALES; i += 1) {
      if (i === Math.floor((2 * SALES) / 5)) {
        // The power goes while the motor turns: the card keeps the database as at the vend's claim.
        let image = null as Buffer | null;
        observeDurableCommits((step) => {
          if (step === 'vend_claim') image = node.db.serialize();
        });
        const order = await sell();
        await node.money.vend.run();
        observeDurableCommits(null);
        node.db.close();
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${settings.storage.path}${suffix}`, { force: true });
        if (image === null) throw new Error('no durable commit was seen at the vend claim');
        writeFileSync(settings.storage.path, image);
        ({ node, audit } = boot());
        cuts += 1;
        await node.money.recover();
        expect(node.money.orders.get(order.id)?.state).toBe('vend_uncertain');
        // Nothing counts until somebody knows: the read after the restart is not behind its last one.
        check();
        // The technician looks: the item fell.
        node.money.vend.resolve(order.id, true, 'soak: the technician saw the item delivered');
        delivered.count += 1;
        delivered.value += order.amount;
        check();
        continue;
      }
      const order = await sell();
      jam = rand() < 0.1;
      await node.money.vend.run();
      if (jam) failed += 1;
      else {
        delivered.count += 1;
        delivered.value += order.amount;
        if (rand() < 0.05) {
          node.money.vend.refund(order.id, 'complaint');
          await node.money.refunds.run();
          refundedAfter.count += 1;
          refundedAfter.value += order.amount;
        }
      }
      await node.money.refunds.run();
      if (i % 97 === 0) check();
      if (i === Math.floor(SALES / 3) || i === Math.floor((2 * SALES) / 3)) visit();
      if (i === Math.floor(SALES / 2)) {
        // Retention of everything a day old, after the clock moves on a year: the counters stay.
        clock.advance(365 * 86_400_000);
        await createRetention({ db: node.db, clock, logger }, { retentionDays: 1 }).pruneAll();
        check();
        // A catalog change: a new price for A1 from here on (a second price point, LA1).
        catalog().apply(
          {
            version: `v${i}`,
            items: [
              { slot: 'A1', name: 'Water', price: 1700 },
              { slot: 'A2', name: 'Cola', price: 2500 },
            ],
          },
          'soak',
        );
      }
      if (i === Math.floor((3 * SALES) / 4)) {
        node.db.pragma('wal_checkpoint(TRUNCATE)');
        backup = join(core.dir.path, 'backup.db');
        copyFileSync(settings.storage.path, backup);
      }
    }
    check();
    expect(cuts).toBe(1);
    expect(failed).toBeGreaterThan(0);
    expect(refundedAfter.count).toBeGreaterThan(0);
    const beforeRestore = { ...lastInit };
    // The restore from the backup: the read is refused, never backwards; taken on purpose, it is flagged.
    node.db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${settings.storage.path}${suffix}`, { force: true });
    if (backup === null) throw new Error('no backup was taken');
    copyFileSync(backup, settings.storage.path);
    ({ node, audit } = boot());
    expect(() => audit.read('read', 'soak')).toThrow(/less than the last audit read/);
    const flagged = audit.read('read', 'soak', { afterRestore: true });
    expect(flagged.header.afterRestore).toMatchObject({ paidCount: beforeRestore.count, paidValue: beforeRestore.value });
    expect(Number(readDex(flagged.text).one('VA1')[2])).toBeLessThan(beforeRestore.count);
    console.log(
      `dex soak: ${SALES} sales, ${delivered.count} delivered (${delivered.value}), ${failed} failed, ${refundedAfter.count} refunded after delivery, ${reads} reads, ${cuts} power cut, 1 restore`,
    );
  }, 3_600_000);
});
