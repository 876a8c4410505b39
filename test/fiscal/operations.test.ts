import { afterEach, describe, expect, it } from 'vitest';
import { buildFiscalCore, type FiscalHarness } from './harness.js';
import { createRetention } from '../../src/store/index.js';
import { silentLogger } from '../../src/util/logger.js';
import { checkFiscal } from '../../src/selftest/checks/fiscal.js';
import { parseSettings } from '../../src/settings/index.js';

const device = { id: 'vm-001', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] };

describe('fiscal receipts in operation', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  it('a backlog drains at the register’s own pace once it answers again, without counting "busy" as down', async () => {
    h = buildFiscalCore({ fiscal: { alarmUnreachableAfterMin: 1 } });
    h.register.faults.outageUntil(h.clock.now() + 3_600_000);
    for (let i = 0; i < 4; i += 1) await h.sell();
    await h.pass();
    h.clock.advance(2 * 60_000);
    await h.pass();
    expect(h.alarms()).toContain('fiscal_register_unreachable');
    h.register.faults.outageUntil(null);
    h.register.faults.pace(2);
    // The register answers: what waited is sent now, one receipt every 500 ms of the register's time.
    const issuedAt: number[] = [];
    for (let step = 0; step < 40 && h.fiscal.book.waiting().count > 0; step += 1) {
      const before = h.fiscal.book.waiting().count;
      await h.pass();
      if (h.fiscal.book.waiting().count < before) issuedAt.push(h.clock.now());
      h.clock.advance(100);
    }
    expect(h.fiscal.book.waiting().count).toBe(0);
    expect(issuedAt).toHaveLength(4);
    for (let i = 1; i < issuedAt.length; i += 1) expect(issuedAt[i]! - issuedAt[i - 1]!).toBeGreaterThanOrEqual(500);
    expect(issuedAt.at(-1)! - issuedAt[0]!).toBeLessThan(3 * 500 + 400);
    expect(h.alarms()).not.toContain('fiscal_register_unreachable');
    expect(h.register.held()).toHaveLength(4);
  });

  it('a register working offline raises fiscal_register_offline with the hours left, cleared once it is online', async () => {
    h = buildFiscalCore({ fiscal: { alarmUnreachableAfterMin: 15, webkassa: { offlineHoursLimit: 72 } } });
    h.register.faults.offlineSince(h.clock.now());
    await h.pass();
    h.clock.advance(60 * 60_000);
    await h.pass();
    expect(h.alarms()).toEqual(['fiscal_register_offline']);
    const alarm = h.node.outbox.pending(100).find((r) => r.topic === 'alarms/fiscal_register_offline')!;
    expect(JSON.parse(alarm.payload)).toMatchObject({ hoursLeft: 71 });
    h.register.faults.offlineSince(null);
    h.clock.advance(60_000);
    await h.pass();
    expect(h.alarms()).toEqual([]);
  });

  it('the selftest names the register, the receipts waiting, and fails only where sales would stop', async () => {
    h = buildFiscalCore();
    await h.sell();
    await h.pass();
    const ok = await checkFiscal(h.settings, { db: h.node.db, now: h.clock.now(), register: h.register });
    expect(ok.map((l) => [l.name, l.status])).toEqual([
      ['fiscal.register', 'PASS'],
      ['fiscal.receipts', 'PASS'],
    ]);
    h.register.faults.outageUntil(h.clock.now() + 86_400_000);
    await h.sell();
    await h.pass();
    h.clock.advance(2 * 3_600_000);
    const down = await checkFiscal(h.settings, { db: h.node.db, now: h.clock.now(), register: h.register });
    expect(down.map((l) => [l.name, l.status])).toEqual([
      ['fiscal.register', 'WARN'],
      ['fiscal.receipts', 'WARN'],
    ]);
    expect(down[1]!.detail).toMatch(/1 receipt\(s\) waiting, the oldest for 120 min/);
    const stopping = parseSettings({ ...h.settings, fiscal: { ...h.settings.fiscal, stopSalesAfterHours: 1 } });
    expect((await checkFiscal(stopping, { db: h.node.db, now: h.clock.now(), register: h.register }))[0]!.status).toBe('FAIL');
    expect(await checkFiscal(parseSettings({ device }), { db: null, now: 0, register: null })).toEqual([
      expect.objectContaining({ name: 'fiscal', status: 'PASS' }),
    ]);
  });

  it('retention keeps an old order whose receipt is still owed, and prunes the receipts of one it deletes', async () => {
    h = buildFiscalCore();
    const issued = await h.sell();
    await h.pass();
    h.register.faults.outageUntil(h.clock.now() + 365 * 86_400_000);
    const owed = await h.sell();
    await h.pass();
    h.clock.advance(100 * 86_400_000);
    const retention = createRetention({ db: h.node.db, clock: h.clock, logger: silentLogger() }, { retentionDays: 90 });
    retention.pruneBatch();
    expect(h.node.orderRepository.get(issued.id)).toBeUndefined();
    expect(h.receipts(issued.id)).toEqual([]);
    expect(h.node.orderRepository.get(owed.id)).toBeDefined();
    expect(h.receipts(owed.id)).toHaveLength(1);
  });
});
