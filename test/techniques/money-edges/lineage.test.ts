import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { startGeregeStack, type GeregeStack, type OrderAnswer } from '../chaos/stack.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * What a start makes of the database it finds, when the SD card is swapped or rolled back: the real
 * service against the Gerege simulator, real SQLite files moved, copied and put back as a
 * technician does. The high-water mark an old copy cannot roll back is the provider's: the order
 * references of its invoices name this device, this database and the order number, and the start
 * reads them from the Events API before recovery. Sales the database lost are never refunded by
 * themselves: goods went out for them.
 */

let stack: GeregeStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

async function sell(s: GeregeStack): Promise<OrderAnswer> {
  const created = await s.placeOrder();
  await s.sim.pay(created.invoiceId!);
  return waitFor(
    async () => {
      const order = await s.order(created.orderId);
      return order?.state === 'vended' ? order : null;
    },
    { what: `order ${created.orderId} vended` },
  );
}

interface AlarmRow {
  name: string;
  severity: string;
  message: string;
  detail: string;
}
const alarm = (s: GeregeStack, name: string) =>
  s.query<AlarmRow>('SELECT name, severity, message, detail FROM alarms WHERE name = ?', name)[0];
const lineageLines = (s: GeregeStack, from: number) =>
  s.svc
    .logs()
    .slice(from)
    .filter((line) => /^database: /.test(String(line.msg)));

/** Every file of the database (`vendgate.db`, `-wal`, `-shm`, `.lineage`, …), as a glob `vendgate.db*` names them. */
function databaseFiles(dbPath: string): string[] {
  return readdirSync(dirname(dbPath))
    .filter((name) => name.startsWith(basename(dbPath)))
    .map((name) => join(dirname(dbPath), name));
}

/** The sales' invoices were neither refunded nor cancelled at the provider: each one is parked for a person. */
async function parkedNotRefunded(s: GeregeStack, sales: OrderAnswer[]): Promise<void> {
  for (const sale of sales)
    await waitFor(() => s.query('SELECT 1 FROM alarms WHERE name = ?', `orphan_invoice/${sale.invoiceId}`).length === 1, {
      timeoutMs: 60_000,
      what: `the orphan alarm of ${sale.invoiceId}`,
    });
  const invoices = new Set(sales.map((sale) => sale.invoiceId));
  expect(s.sim.records().refunds.filter((refund) => invoices.has(refund.invoiceId))).toEqual([]);
}

describe('gerege: the database a start finds after a card swap', () => {
  it(
    'an empty database after 3 sales (the files moved aside): database_replaced, and the 3 sales are not refunded',
    { timeout: 180_000 },
    async () => {
      const s = (stack = await startGeregeStack({ config: { device: { id: `lin-a-${process.pid}` } } }));
      const sales = [await sell(s), await sell(s), await sell(s)];
      await s.svc.kill('SIGTERM');
      const aside = join(s.svc.dir, 'aside');
      mkdirSync(aside);
      for (const file of databaseFiles(s.svc.dbPath)) renameSync(file, join(aside, basename(file)));
      const before = s.svc.logs().length;
      await s.svc.restart();

      const found = await waitFor(() => alarm(s, 'database_replaced'), { what: 'the database_replaced alarm' });
      expect(found.severity).toBe('critical');
      const lines = lineageLines(s, before);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        msg: 'database: replaced on a device that sold before',
        lineage: 'replaced',
        source: 'provider records',
      });
      await parkedNotRefunded(s, sales);
      expect(s.svc.readSimLog()).toHaveLength(3);
    },
  );

  it(
    'a backup restored onto a new card (no side mark): database_restored, 2 orders behind, the 2 later sales not refunded',
    { timeout: 180_000 },
    async () => {
      const s = (stack = await startGeregeStack({ config: { device: { id: `lin-b-${process.pid}` } } }));
      await sell(s);
      const backup = join(s.svc.dir, 'nightly.db');
      const live = new Database(s.svc.dbPath, { readonly: true });
      await live.backup(backup);
      live.close();
      const later = [await sell(s), await sell(s)];
      await s.svc.kill('SIGTERM');
      // The new card: the backup is all there is; the old card (with its side mark) is gone.
      for (const file of databaseFiles(s.svc.dbPath)) rmSync(file, { force: true });
      copyFileSync(backup, s.svc.dbPath);
      expect(existsSync(`${s.svc.dbPath}.lineage`)).toBe(false);
      const before = s.svc.logs().length;
      await s.svc.restart();

      const found = await waitFor(() => alarm(s, 'database_restored'), { what: 'the database_restored alarm' });
      expect(JSON.parse(found.detail)).toMatchObject({ lineage: 'restored', source: 'provider records', behind: { orders: 2 } });
      expect(found.message).toContain('2 orders behind');
      const lines = lineageLines(s, before);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ msg: 'database: restored from a backup', behind: { orders: 2 } });
      await parkedNotRefunded(s, later);
    },
  );

  it(
    'a whole card image put back (the database and its side mark from the same moment): detected as restored',
    { timeout: 180_000 },
    async () => {
      const s = (stack = await startGeregeStack({ config: { device: { id: `lin-c-${process.pid}` } } }));
      await sell(s);
      // The image: every file of the database as the card held it, side mark included, taken with the service stopped.
      await s.svc.kill('SIGTERM');
      const image = join(s.svc.dir, 'image');
      mkdirSync(image);
      for (const file of databaseFiles(s.svc.dbPath)) copyFileSync(file, join(image, basename(file)));
      expect(existsSync(join(image, 'vendgate.db.lineage'))).toBe(true);
      await s.svc.restart();
      const later = [await sell(s), await sell(s)];
      await s.svc.kill('SIGTERM');
      for (const file of databaseFiles(s.svc.dbPath)) rmSync(file, { force: true });
      for (const name of readdirSync(image)) copyFileSync(join(image, name), join(dirname(s.svc.dbPath), name));
      const before = s.svc.logs().length;
      await s.svc.restart();

      const found = await waitFor(() => alarm(s, 'database_restored'), { what: 'the database_restored alarm' });
      expect(JSON.parse(found.detail)).toMatchObject({ source: 'provider records', behind: { orders: 2 } });
      expect(lineageLines(s, before)).toEqual([expect.objectContaining({ lineage: 'restored' })]);
      await parkedNotRefunded(s, later);
    },
  );

  it('a restart of the same database: one line, continuing, no alarm', { timeout: 120_000 }, async () => {
    const s = (stack = await startGeregeStack({ config: { device: { id: `lin-d-${process.pid}` } } }));
    const first = lineageLines(s, 0);
    expect(first).toEqual([expect.objectContaining({ msg: 'database: brand new', lineage: 'new' })]);
    await sell(s);
    await s.svc.kill('SIGTERM');
    const before = s.svc.logs().length;
    await s.svc.restart();
    expect(lineageLines(s, before)).toEqual([expect.objectContaining({ msg: 'database: continuing', lineage: 'continuing' })]);
    expect(s.query("SELECT name FROM alarms WHERE name LIKE 'database_%'")).toEqual([]);
  });
});
