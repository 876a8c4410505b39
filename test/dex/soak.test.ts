import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCore, runnerAnswering, type Core } from '../helpers/core.js';
import { createRetention, openDatabase } from '../../src/store/index.js';
import { createCatalog } from '../../src/catalog/index.js';
import { createOutbox } from '../../src/outbox/index.js';
import { createVisits, dexAuditFor, type DexAudit } from '../../src/dex/index.js';
import { readDex } from './dex-reader.js';

/**
 * A seeded run of mixed sales against the audit: delivered and failed vends, refunds after delivery,
 * retention, a catalog change, two visits and a restore. After every read, "since init" has not gone
 * backwards, and the reset intervals add up to the ledger's delivered vends. DEX_SOAK_SALES=10000
 * for the long run.
 */
const SALES = Number(process.env.DEX_SOAK_SALES ?? 300);

let core: Core;
beforeEach(() => {
  core = buildCore();
});
afterEach(() => core.close());

function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('the audit under a seeded mix of sales', () => {
  it(`${SALES} sales: since init never goes backwards and the intervals add up to the delivered vends`, async () => {
    const rand = random(7);
    let db = core.db;
    let outbox = core.outbox;
    const catalog = () => createCatalog({ db, clock: core.clock, logger: core.logger, outbox }, core.settings);
    let audit: DexAudit = dexAuditFor(core.settings, { db, clock: core.clock, outbox, items: () => catalog().current().items });
    const failing = runnerAnswering(core, { result: 'failed', reason: 'jam' });
    let delivered = 0;
    let lastInit = { count: 0, value: 0 };
    // Vends counted in the intervals closed so far (each visit's reset read closes one).
    let closed = 0;
    const take = (read: { text: string }, closes: boolean) => {
      const dex = readDex(read.text);
      expect(dex.problems).toEqual([]);
      const [value, count, , sinceReset] = dex.one('VA1').slice(1).map(Number) as [number, number, number, number];
      expect(count).toBeGreaterThanOrEqual(lastInit.count);
      expect(value).toBeGreaterThanOrEqual(lastInit.value);
      expect(count).toBe(delivered);
      expect(closed + sinceReset).toBe(count);
      lastInit = { count, value };
      if (closes) closed += sinceReset;
    };
    const check = () => take(audit.read('read', 'soak'), false);
    let backup: string | null = null;
    for (let i = 1; i <= SALES; i += 1) {
      const slot = rand() < 0.5 ? 'A1' : 'A2';
      const order = await core.orders.create({ source: 'kiosk', slot });
      core.fake.set(order.invoice_id!, 'paid');
      await core.observe(order.invoice_id!);
      if (rand() < 0.1) await failing.run();
      else {
        await core.money.vend.run();
        delivered += 1;
        if (rand() < 0.05) {
          core.money.vend.refund(order.id, 'complaint');
          await core.money.refunds.run();
        }
      }
      await core.money.refunds.run();
      if (i % 97 === 0) check();
      if (i === Math.floor(SALES / 3) || i === Math.floor((2 * SALES) / 3)) {
        const visits = createVisits({
          db,
          clock: core.clock,
          outbox,
          audit,
          slots: { refill: () => {}, stock: () => null, known: () => true },
        });
        take(visits.record('soak', {}).read, true);
      }
      if (i === Math.floor(SALES / 2)) {
        // Retention of everything a day old, after the clock moves on a year.
        core.clock.advance(365 * 86_400_000);
        await createRetention({ db, clock: core.clock, logger: core.logger }, { retentionDays: 1 }).pruneAll();
        check();
        // A catalog change: a new price for A1 from here on.
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
        db.pragma('wal_checkpoint(TRUNCATE)');
        backup = join(core.dir.path, 'backup.db');
        copyFileSync(core.settings.storage.path, backup);
      }
    }
    check();
    // The restore: refused, never backwards.
    db.close();
    copyFileSync(backup!, core.settings.storage.path);
    db = openDatabase(core.settings.storage.path);
    core.db = db;
    outbox = createOutbox({ db, clock: core.clock, deviceId: core.settings.device.id });
    audit = dexAuditFor(core.settings, { db, clock: core.clock, outbox, items: () => catalog().current().items });
    expect(() => audit.read('read', 'soak')).toThrow(/less than the last audit read/);
    expect(Number(readDex(audit.read('read', 'soak', { afterRestore: true }).text).one('VA1')[2])).toBeLessThan(delivered);
  }, 300_000);
});
