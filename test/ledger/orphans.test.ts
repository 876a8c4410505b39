import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createOrphanSweep, type OrphanCandidate } from '../../src/ledger/orphans.js';
import { markRestored, openDatabase, type Db } from '../../src/store/index.js';
import { createOutbox } from '../../src/outbox/index.js';
import { createManualClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { ProviderError } from '../../src/payments/types.js';
import { createFakeProvider, type FakeProvider } from '../fakes/provider.js';
import { tempDir } from '../helpers/temp.js';

/**
 * The orphan sweep on its own, on a real SQLite file: an invoice under this device's reference that
 * no order knows is followed to a final answer, once, with an alarm; the black-box case (the real
 * service against the Gerege simulator) is test/techniques/money-edges/orphans.test.ts.
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
    const made = await fake.provider.createInvoice({
      amount: 1500,
      currency: 'MNT',
      reference,
      description: 'Water',
      idempotencyKey: `${reference}-pay`,
      expiresInSec: 120,
      captureMode: 'automatic',
    } as never);
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
  return { db, clock, fake, sweep, invoice, alarms, row, candidates };
}

describe('the orphan sweep', () => {
  it('a paid orphan is refunded once, claimed before the POST under a key of its own, with a critical alarm', async () => {
    const w = world();
    const c = await w.invoice('vm-1-lostdb-7-a1b2c3d4');
    w.fake.set(c.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(1);
    expect(w.fake.callsOf('refund').map((call) => call.arg)).toEqual([
      { invoiceId: c.invoiceId, amount: 1500, idempotencyKey: 'vm-1-lostdb-7-a1b2c3d4-orphan-refund' },
    ]);
    expect(w.row(c.invoiceId)).toMatchObject({ state: 'refunded', amount: 1500 });
    expect(w.alarms()).toEqual([expect.objectContaining({ name: `orphan_invoice/${c.invoiceId}`, severity: 'critical' })]);
    // A second pass does nothing more: one refund per orphan.
    expect(await w.sweep.sweep()).toBe(0);
    expect(w.fake.callsOf('refund')).toHaveLength(1);
  });

  it('a partly refunded orphan has only the rest refunded', async () => {
    const w = world();
    const c = await w.invoice('vm-1-lostdb-8-00000001');
    w.fake.set(c.invoiceId, 'partially_refunded', { refundedAmount: 500 });
    await w.sweep.sweep();
    expect(w.fake.callsOf('refund').map((call) => (call.arg as { amount: number }).amount)).toEqual([1000]);
  });

  it('a held orphan (manual capture) is voided; a closed unpaid one owes nothing and says so', async () => {
    const w = world();
    const held = await w.invoice('vm-1-db-9-00000002');
    const expired = await w.invoice('vm-1-db-10-00000003');
    w.fake.set(held.invoiceId, 'authorized');
    w.fake.set(expired.invoiceId, 'expired');
    expect(await w.sweep.sweep()).toBe(2);
    expect(w.fake.callsOf('cancelInvoice').map((call) => call.arg)).toEqual([held.invoiceId]);
    expect(w.fake.callsOf('refund')).toEqual([]);
    expect(w.row(held.invoiceId)?.state).toBe('closed');
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
    expect(w.fake.callsOf('refund')).toEqual([]);
    expect(w.alarms()).toEqual([]);
  });

  it('a device whose id starts with ours is another device: vm-1 never settles vm-1-annex’s sale, nested either way', async () => {
    const w = world();
    // The inbox holds the whole account's events (the Events API, the merchant's webhooks).
    const annex = await w.invoice('vm-1-annex-x9y8z7-12-cafebabe');
    const annexOld = await w.invoice('vm-1-annex-x9y8z7-13'); // before the nonce
    const annexNested = await w.invoice('vm-1-b-cccc-7-0badf00d'); // device vm-1-b, database cccc
    const own = await w.invoice('vm-1-x9y8z7-12-cafebabe');
    for (const c of [annex, annexOld, annexNested, own]) w.fake.set(c.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(1);
    expect(w.fake.callsOf('refund').map((call) => (call.arg as { invoiceId: string }).invoiceId)).toEqual([own.invoiceId]);
    for (const c of [annex, annexOld, annexNested]) expect(w.row(c.invoiceId), c.reference).toBeUndefined();
    expect(w.alarms().map((a) => a.name)).toEqual([`orphan_invoice/${own.invoiceId}`]);
  });

  it('on a restored database a paid orphan is parked for a person, not refunded: it may have been vended before the restore', async () => {
    const w = world();
    // What checkLineage records when the database is below its lineage mark (store/lineage.ts).
    markRestored(w.db);
    const paid = await w.invoice('vm-1-lostdb-21-0000000a');
    const expired = await w.invoice('vm-1-lostdb-22-0000000b');
    w.fake.set(paid.invoiceId, 'paid');
    w.fake.set(expired.invoiceId, 'expired');
    expect(await w.sweep.sweep()).toBe(2);
    expect(w.fake.callsOf('refund')).toEqual([]);
    expect(w.row(paid.invoiceId)).toMatchObject({ state: 'person', amount: 1500, refund_key: null });
    expect(w.row(expired.invoiceId)?.state).toBe('closed'); // nothing owed is still nothing owed
    const alarm = w.alarms().find((a) => a.name === `orphan_invoice/${paid.invoiceId}`);
    expect(alarm?.severity).toBe('critical');
    expect(alarm?.detail).toMatch(/restored from a backup.*NOT refunded.*vm-1-lostdb-21-0000000a.*refund it at the provider/);
    // Parked for good: a later pass neither refunds it nor raises it again.
    expect(await w.sweep.sweep()).toBe(0);
    expect(w.fake.callsOf('refund')).toEqual([]);
  });

  it('on a database never restored the same paid orphan is refunded', async () => {
    const w = world();
    const paid = await w.invoice('vm-1-lostdb-21-0000000a');
    w.fake.set(paid.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(1);
    expect(w.fake.callsOf('refund')).toHaveLength(1);
    expect(w.row(paid.invoiceId)?.state).toBe('refunded');
  });

  it('an invoice that expired before the retention may be a pruned order’s: left alone with a warning, never refunded', async () => {
    const w = world();
    // A vended sale of four days ago (retention: 3 days): its order was deleted, and an event about
    // its invoice reached the inbox after (a late webhook, the Events API read again).
    const old = await w.invoice('vm-1-db-30-0000000c');
    w.fake.set(old.invoiceId, 'paid');
    w.clock.advance(4 * 86_400_000);
    const fresh = await w.invoice('vm-1-db-31-0000000d');
    w.fake.set(fresh.invoiceId, 'paid');
    expect(await w.sweep.sweep()).toBe(2);
    expect(w.fake.callsOf('refund').map((call) => (call.arg as { invoiceId: string }).invoiceId)).toEqual([fresh.invoiceId]);
    expect(w.row(old.invoiceId)?.state).toBe('closed');
    const alarm = w.alarms().find((a) => a.name === `orphan_invoice/${old.invoiceId}`);
    expect(alarm?.severity).toBe('warning');
    expect(alarm?.detail).toMatch(/retentionDays.*neither refunded nor voided/);
  });

  it('a refund that does not go through, or a claim a stop interrupted, is parked for a person with an alarm', async () => {
    const w = world();
    const refused = await w.invoice('vm-1-db-13-00000007');
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
    expect(w.row(c.invoiceId)?.state).toBe('refunded');
  });
});
