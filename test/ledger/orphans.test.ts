import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createOrphanSweep, type OrphanCandidate } from '../../src/ledger/orphans.js';
import { databaseId, markRestored, openDatabase, type Db } from '../../src/store/index.js';
import { createOrderRepository } from '../../src/orders/index.js';
import { createOutbox } from '../../src/outbox/index.js';
import { createManualClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { ProviderError } from '../../src/payments/types.js';
import { createFakeProvider, waterInvoiceRequest, type FakeProvider } from '../fakes/provider.js';
import { tempDir } from '../helpers/temp.js';

/**
 * The orphan sweep on its own, on a real SQLite file: an invoice under this device's reference that
 * no order knows. Money on it is parked for a person (the database lost history: goods may have gone
 * out), unless this database proves no goods went out; a body the provider contradicts is a forged
 * event. The black-box cases (the real service against the Gerege simulator) are in
 * test/techniques/money-edges/orphans.test.ts.
 */
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function world(known: string[] = []) {
  const dir = tempDir();
  const db: Db = openDatabase(join(dir.path, 'vendgate.db'));
  cleanups.push(() => {
    db.close();
    dir.cleanup();
  });
  const clock = createManualClock(1_764_400_000_000);
  const outbox = createOutbox({ db, clock, deviceId: 'vm-1' });
  const fake: FakeProvider = createFakeProvider({ now: () => clock.now() });
  const candidates: OrphanCandidate[] = [];
  const sweep = createOrphanSweep({
    db,
    clock,
    logger: silentLogger(),
    outbox,
    provider: fake.provider,
    orders: { getByInvoice: (id) => (known.includes(id) ? ({ id: 1 } as never) : undefined) },
    // As the inbox's SQL does: a plain prefix, which also takes in `vm-1-annex-…`.
    candidates: (prefix) => candidates.filter((c) => c.reference.startsWith(prefix)),
    deviceId: 'vm-1',
    lookbackMs: 86_400_000,
    retentionMs: 3 * 86_400_000,
  });
  async function invoice(reference: string): Promise<OrphanCandidate> {
    const made = await fake.provider.createInvoice(waterInvoiceRequest(reference));
    const candidate = { invoiceId: made.id, reference };
    candidates.push(candidate);
    return candidate;
  }
  const alarms = () =>
    db.prepare('SELECT name, severity, detail FROM alarms ORDER BY name').all() as {
      name: string;
      severity: string;
      detail: string;
    }[];
  const row = (id: string) =>
    db.prepare('SELECT state, amount, refund_key FROM orphan_invoices WHERE invoice_id = ?').get(id) as
      { state: string; amount: number; refund_key: string | null } | undefined;
  /** An order of this database, closed the way `state` says, whose reference an orphan may carry. */
  function closedOrder(state: 'failed' | 'expired'): string {
    const repo = createOrderRepository({ db, clock });
    const order = repo.insert(
      {
        request: { description: 'Water', expiresInSec: 120, captureMode: 'automatic' },
        source: 'kiosk',
        slot: 'A1',
        itemName: 'Water',
        amount: 1500,
        currency: 'MNT',
        livemode: false,
        provider: 'sandbox',
        captureMode: 'automatic',
      },
      'vm-1',
      databaseId(db),
    );
    repo.transition(order.id, 'creating', state, 'test');
    return order.reference;
  }
  return { db, clock, fake, sweep, invoice, alarms, row, candidates, closedOrder };
}

describe('the orphan sweep', () => {
  it('a paid orphan is parked for a person with a critical alarm that says everything needed; nothing is refunded, then or later', async () => {
    const w = world();
    const c = await w.invoice('vm-1-lostdb-7-a1b2c3d4');
    w.fake.set(c.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(1);
    expect(w.fake.callsOf('refund')).toEqual([]);
    expect(w.row(c.invoiceId)).toMatchObject({ state: 'person', amount: 1500, refund_key: null });
    const [alarm] = w.alarms();
    expect(alarm).toMatchObject({ name: `orphan_invoice/${c.invoiceId}`, severity: 'critical' });
    expect(JSON.parse(alarm!.detail)).toMatchObject({
      invoiceId: c.invoiceId,
      reference: 'vm-1-lostdb-7-a1b2c3d4',
      amount: 1500,
      refunded: 0,
      currency: 'MNT',
      settle: expect.stringContaining(`vendgate settle orphan_invoice/${c.invoiceId}`),
    });
    expect(await w.sweep.sweep()).toBe(0);
    expect(w.fake.callsOf('refund')).toEqual([]);
  });

  it('a held orphan (manual capture) is parked, not voided; a closed unpaid one owes nothing and says so', async () => {
    const w = world();
    const held = await w.invoice('vm-1-db-9-00000002');
    const expired = await w.invoice('vm-1-db-10-00000003');
    w.fake.set(held.invoiceId, 'authorized');
    w.fake.set(expired.invoiceId, 'expired');
    expect(await w.sweep.sweep()).toBe(2);
    expect(w.fake.callsOf('cancelInvoice')).toEqual([]);
    expect(w.fake.callsOf('refund')).toEqual([]);
    expect(w.row(held.invoiceId)?.state).toBe('person');
    expect(w.row(expired.invoiceId)?.state).toBe('closed');
    expect(
      w
        .alarms()
        .map((a) => a.severity)
        .sort(),
    ).toEqual(['critical', 'warning']);
  });

  it('a pending orphan is left to be read again; an invoice an order knows, or another device, is no orphan', async () => {
    const w = world(['fk_2']);
    const pending = await w.invoice('vm-1-db-11-00000004');
    const known = await w.invoice('vm-1-db-12-00000005');
    const foreign = await w.invoice('vm-10-db-1-00000006');
    w.fake.set(known.invoiceId, 'paid');
    w.fake.set(foreign.invoiceId, 'paid');
    expect(known.invoiceId).toBe('fk_2');
    expect(await w.sweep.sweep()).toBe(0);
    expect(w.row(pending.invoiceId)).toBeUndefined();
    expect(w.alarms()).toEqual([]);
  });

  it('a device whose id starts with ours is another device: vm-1 never takes up vm-1-annex’s sale, nested either way', async () => {
    const w = world();
    const annex = await w.invoice('vm-1-annex-x9y8z7-12-cafebabe');
    const annexOld = await w.invoice('vm-1-annex-x9y8z7-13'); // before the nonce
    const annexNested = await w.invoice('vm-1-b-cccc-7-0badf00d'); // device vm-1-b, database cccc
    const own = await w.invoice('vm-1-x9y8z7-12-cafebabe');
    for (const c of [annex, annexOld, annexNested, own]) w.fake.set(c.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(1);
    for (const c of [annex, annexOld, annexNested]) expect(w.row(c.invoiceId), c.reference).toBeUndefined();
    expect(w.alarms().map((a) => a.name)).toEqual([`orphan_invoice/${own.invoiceId}`]);
  });

  it('the reference is the provider’s, not the body’s: a body that puts our reference on another device’s invoice is a forged event, nothing moved', async () => {
    const w = world();
    const theirs = await w.invoice('vm-2-db-3-00000011');
    w.candidates.splice(0, w.candidates.length, { invoiceId: theirs.invoiceId, reference: 'vm-1-lostdb-3-00000011' });
    w.fake.set(theirs.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(1);
    expect(w.fake.callsOf('refund')).toEqual([]);
    expect(w.row(theirs.invoiceId)?.state).toBe('forged');
    const [alarm] = w.alarms();
    expect(alarm).toMatchObject({ name: `forged_event/${theirs.invoiceId}`, severity: 'critical' });
    expect(JSON.parse(alarm!.detail)).toMatchObject({
      claimed: { reference: 'vm-1-lostdb-3-00000011' },
      provider: { reference: 'vm-2-db-3-00000011' },
    });
  });

  it('this database’s own proof that no goods went out (its order under that reference, closed unpaid, never queued for a vend): refunded once under the orphan key', async () => {
    const w = world();
    const reference = w.closedOrder('failed');
    const c = await w.invoice(reference);
    w.fake.set(c.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(1);
    expect(w.fake.callsOf('refund').map((call) => call.arg)).toEqual([
      { invoiceId: c.invoiceId, amount: 1500, idempotencyKey: `${reference}-orphan-refund` },
    ]);
    expect(w.row(c.invoiceId)?.state).toBe('refunded');
    expect(await w.sweep.sweep()).toBe(0);
    expect(w.fake.callsOf('refund')).toHaveLength(1);
  });

  it('the same order on a restored database proves nothing (a restore can take a later vend away): parked', async () => {
    const w = world();
    const reference = w.closedOrder('expired');
    markRestored(w.db);
    const c = await w.invoice(reference);
    w.fake.set(c.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(1);
    expect(w.fake.callsOf('refund')).toEqual([]);
    expect(w.row(c.invoiceId)?.state).toBe('person');
  });

  it('an invoice that expired before the retention may be a pruned order’s: left alone with a warning', async () => {
    const w = world();
    const old = await w.invoice('vm-1-db-30-0000000c');
    w.fake.set(old.invoiceId, 'paid');
    w.clock.advance(4 * 86_400_000);
    const fresh = await w.invoice('vm-1-db-31-0000000d');
    w.fake.set(fresh.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(2);
    expect(w.fake.callsOf('refund')).toEqual([]);
    expect(w.row(old.invoiceId)?.state).toBe('closed');
    expect(w.row(fresh.invoiceId)?.state).toBe('person');
    const alarm = w.alarms().find((a) => a.name === `orphan_invoice/${old.invoiceId}`);
    expect(alarm?.severity).toBe('warning');
    expect(alarm?.detail).toMatch(/retentionDays.*neither refunded nor voided/);
  });

  it('a proven refund that does not go through, or a claim a stop interrupted, is parked for a person with an alarm', async () => {
    const w = world();
    const refused = await w.invoice(w.closedOrder('failed'));
    w.fake.set(refused.invoiceId, 'paid');
    w.fake.hooks.refund = () => ({ status: 'failed', detail: 'declined' });
    await w.sweep.sweep();
    expect(w.row(refused.invoiceId)?.state).toBe('person');

    const interrupted = await w.invoice('vm-1-db-14-00000008');
    w.db
      .prepare(
        "INSERT INTO orphan_invoices (invoice_id, reference, state, amount, refund_key, detail, found_at, updated_at) VALUES (?, ?, 'refunding', 1500, 'k', 'refund claimed', 0, 0)",
      )
      .run(interrupted.invoiceId, interrupted.reference);
    await w.sweep.sweep();
    expect(w.row(interrupted.invoiceId)?.state).toBe('person');
    expect(w.fake.callsOf('refund')).toHaveLength(1); // never sent again
    expect(w.alarms().filter((a) => a.severity === 'critical')).toHaveLength(2);
  });

  it('an orphan the provider cannot be asked about now is tried at the next pass, nothing recorded meanwhile', async () => {
    const w = world();
    const c = await w.invoice('vm-1-db-15-00000009');
    w.fake.set(c.invoiceId, 'paid');
    w.fake.hooks.getError = () => new ProviderError('network', 'down');
    expect(await w.sweep.sweep()).toBe(0);
    expect(w.row(c.invoiceId)).toBeUndefined();
    w.fake.hooks.getError = undefined;
    expect(await w.sweep.sweep()).toBe(1);
    expect(w.row(c.invoiceId)?.state).toBe('person');
  });
});
