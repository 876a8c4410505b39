import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/index.js';
import { deviceConfig } from '../selftest/harness.js';
import { run } from '../cli/cli-io.js';
import { readDex } from './dex-reader.js';

/** `vendgate dex`, `visit` and `picklist` on a real database file, as a technician runs them on site. */
async function deviceWithSales(sales: { slot: string; amount: number; delivered: boolean }[]) {
  const device = await deviceConfig({
    device: {
      catalog: [
        { slot: 'A1', name: 'Water', price: 1500 },
        { slot: 'A2', name: 'Cola', price: 2500 },
      ],
    },
  });
  const db = openDatabase(device.dbPath);
  const order = db.prepare(`INSERT INTO orders (reference, idempotency_key, source, slot, item_name, amount, currency, livemode, provider,
    capture_mode, state, created_at, updated_at) VALUES (?, ?, 'kiosk', ?, ?, ?, 'MNT', 0, 'sandbox', 'automatic', ?, 1, 1)`);
  const history = db.prepare('INSERT INTO order_history (order_id, at, from_state, to_state, reason) VALUES (?, 1, ?, ?, ?)');
  sales.forEach((sale, i) => {
    const id = Number(
      order.run(`ref-${i}`, `ref-${i}-pay`, sale.slot, sale.slot, sale.amount, sale.delivered ? 'vended' : 'refunded').lastInsertRowid,
    );
    history.run(id, 'vending', sale.delivered ? 'vended' : 'vend_failed', 'test');
  });
  db.close();
  return device;
}

describe('vendgate dex, visit and picklist', () => {
  it('dex --out writes a file whose counters are the delivered sales; a second read continues the chain', async () => {
    const device = await deviceWithSales([
      { slot: 'A1', amount: 1500, delivered: true },
      { slot: 'A2', amount: 2500, delivered: true },
      { slot: 'A2', amount: 2500, delivered: false },
    ]);
    const out = join(device.dir, 'audit.dex');
    const first = await run(['dex', '--config', device.path, '--out', out]);
    expect(first.code).toBe(0);
    const dex = readDex(readFileSync(out, 'utf8'));
    expect(dex.problems).toEqual([]);
    expect(dex.one('VA1').slice(1).map(Number)).toEqual([4000, 2, 4000, 2]);
    const second = await run(['dex', '--config', device.path]);
    expect(readDex(second.stdout).one('EA3')[1]).toBe('2');
    const again = await run(['dex', '--config', device.path, '--read', '1']);
    expect(again.stdout).toBe(readFileSync(out, 'utf8'));
  });

  it('visit records the fills and resets the interval; bad input is refused and writes nothing', async () => {
    const device = await deviceWithSales([{ slot: 'A1', amount: 1500, delivered: true }]);
    const bad = await run(['visit', '--config', device.path, '--by', 'Bat', '--fill', 'A1=lots']);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/SLOT=COUNT/);
    const unknown = await run(['visit', '--config', device.path, '--by', 'Bat', '--fill', 'Z9=3']);
    expect(unknown.code).not.toBe(0);
    const db = openDatabase(device.dbPath);
    expect(db.prepare('SELECT count(*) AS n FROM dex_reads').get()).toEqual({ n: 0 });
    db.close();
    const visit = await run(['visit', '--config', device.path, '--by', 'Bat', '--fill', 'A1=10']);
    expect(visit.code).toBe(0);
    expect(readDex(visit.stdout).one('VA1').slice(1).map(Number)).toEqual([1500, 1, 1500, 1]);
    const after = await run(['dex', '--config', device.path]);
    expect(readDex(after.stdout).one('VA1').slice(1).map(Number)).toEqual([1500, 1, 0, 0]);
    const picklist = await run(['picklist', '--config', device.path, '--json']);
    expect(JSON.parse(picklist.stdout).picklist).toEqual(
      expect.arrayContaining([expect.objectContaining({ selection: 'A1', stock: 10, sold: 0, bring: 0 })]),
    );
  });
});
