import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startProviderStack, type ProviderStack, type OrderAnswer } from '../chaos/stack.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * The edges of a payment's life, black-box: the real service (`dist/main.js`) against the provider
 * simulator over HTTP, a real SQLite file restored from a real backup copy, and outages that are
 * outages of the provider (a TCP proxy that refuses connections), not flags inside the service.
 * Every case here was seen losing goods or money on the first release.
 */

let stack: ProviderStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

const MONEY_SETTLED = ['vended', 'refunded'];

async function settled(s: ProviderStack, orderId: number, states = MONEY_SETTLED, timeoutMs = 30_000): Promise<OrderAnswer> {
  return waitFor(
    async () => {
      const current = await s.order(orderId);
      return current && states.includes(current.state) ? current : null;
    },
    { timeoutMs, what: `order ${orderId} to be ${states.join(' or ')}` },
  );
}

const refundsAtProvider = (s: ProviderStack, invoiceId: string) => s.sim.records().refunds.filter((r) => r.invoiceId === invoiceId);
const alarms = (s: ProviderStack, prefix: string) => s.query<{ name: string }>('SELECT name FROM alarms WHERE name LIKE ?', `${prefix}%`);

// Kaspi goes through the fleet relay's Kaspi caller, whose journal answers a repeated ExternalId with
// the QR it made: a restored database must never send the old key again, or the relay would hand back
// the paid QR and the device would vend it a second time.
describe.each(['gerege', 'qutpay', 'qpay', 'kaspi'] as const)('%s: a database restored from a backup', (provider) => {
  it('never vends an old paid invoice again, and says the database was restored', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ provider }));
    const first = await s.placeOrder();
    await s.sim.pay(first.invoiceId!);
    expect((await settled(s, first.orderId)).state).toBe('vended');

    // The nightly backup: a real copy of the live database, taken while the service runs.
    const backup = join(s.svc.dir, 'backup.db');
    const live = new Database(s.svc.dbPath, { readonly: true });
    await live.backup(backup);
    live.close();

    const second = await s.placeOrder();
    await s.sim.pay(second.invoiceId!);
    expect((await settled(s, second.orderId)).state).toBe('vended');

    // The SD card fails; the technician restores last night's backup.
    await s.svc.kill('SIGTERM');
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${s.svc.dbPath}${suffix}`, { force: true });
    copyFileSync(backup, s.svc.dbPath);
    await s.svc.restart();

    // The next order has the same order id as the lost one, but not its key: a new invoice, unpaid.
    const third = await s.placeOrder();
    expect(third.orderId).toBe(second.orderId);
    expect(third.invoiceId).not.toBe(second.invoiceId);
    expect(third.state).toBe('awaiting_payment');
    expect(third.reference).not.toBe(second.reference);
    await waitFor(() => alarms(s, 'database_restored').length === 1, { what: 'the restored-database alarm' });
    expect(s.svc.readSimLog()).toHaveLength(2);

    // And it is sold normally.
    await s.sim.pay(third.invoiceId!);
    expect((await settled(s, third.orderId)).state).toBe('vended');
    expect(s.svc.readSimLog().map((line) => line.orderId)).toEqual([first.orderId, second.orderId, third.orderId]);
  });
});

// For Kaspi the outage is the fleet relay out of reach (the device's only way to Kaspi).
// The four providers' cases run side by side (each its own service, simulator, proxy and ports):
// each waits out a real 30 s window, mostly idle, and one after the other they took two minutes.
describe.concurrent.each(['gerege', 'qutpay', 'qpay', 'kaspi'] as const)('%s: a long outage of the provider', (provider) => {
  it(
    'a payment made while the uplink is down, past the QR expiry and any grace, is still found and settled',
    { timeout: 120_000 },
    async ({ expect, onTestFinished }) => {
      // The shortest window there is (30 s): the customer's window runs on the device's own clock,
      // which no provider clock or Date header shortens (money-path.md, "Clocks and outages").
      const s = await startProviderStack({
        provider,
        outage: true,
        config: { provider: { invoiceTtlSec: 30 }, poll: { lateGraceSec: 0, maxBackoffMs: 1_000 } },
      });
      onTestFinished(() => s.stop());
      const placed = await s.placeOrder();
      if (provider === 'gerege') {
        await waitFor(
          () =>
            s.query('SELECT 1 FROM webhook_events WHERE processed_at IS NULL').length === 0 &&
            s.query('SELECT 1 FROM webhook_events').length > 0,
          { timeoutMs: 10_000, what: 'the invoice-created webhook to be handled' },
        );
      } else {
        // No webhook before a payment here (Kaspi sends none at all): the device has read the open invoice once.
        await waitFor(() => s.sim.records().getCalls.some((c) => c.id === placed.invoiceId), {
          timeoutMs: 10_000,
          what: 'the first read of the invoice',
        });
      }
      // The uplink goes down (no API, no webhooks); the customer pays just before the QR runs out.
      // The outage outlasts the provider's webhook retries: those webhooks are lost for good.
      s.sim.setFaults({ dropWebhook: 1 });
      await s.proxy!.cut();
      await s.sim.pay(placed.invoiceId!);
      const expiresAt = Date.parse(placed.expiresAt);
      // The outage lasts past the expiry and past every grace period the device has.
      await waitFor(() => Date.now() > expiresAt + 2_000, { timeoutMs: 45_000, what: 'the outage to outlast the expiry' });
      await s.proxy!.restore();
      s.sim.setFaults({ dropWebhook: 0 });

      const end = await settled(s, placed.orderId);
      const refunds = refundsAtProvider(s, placed.invoiceId!);
      if (end.state === 'vended') {
        expect(s.svc.readSimLog()).toHaveLength(1);
        expect(refunds).toHaveLength(0);
      } else {
        expect(s.svc.readSimLog()).toHaveLength(0);
        expect(refunds.map((r) => r.amount)).toEqual([1500]);
      }
    },
  );
});

describe('refunds made elsewhere are evidence', () => {
  it('qutpay: a partial refund seen before the vend stops the vend and returns the rest, with an alarm', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ provider: 'qutpay', outage: true }));
    const placed = await s.placeOrder();
    s.sim.setFaults({ webhookOutage: true });
    await s.proxy!.cut();
    await s.sim.pay(placed.invoiceId!);
    s.sim.refundOutside(placed.invoiceId!, 500);
    await s.proxy!.restore();
    s.sim.setFaults({ webhookOutage: false });

    expect((await settled(s, placed.orderId)).state).toBe('refunded');
    expect(s.svc.readSimLog()).toHaveLength(0);
    const refunds = refundsAtProvider(s, placed.invoiceId!);
    expect(refunds.reduce((sum, r) => sum + r.amount, 0)).toBe(1500);
    expect(refunds).toHaveLength(2);
    expect(alarms(s, `refunded_elsewhere/${placed.orderId}`)).toHaveLength(1);
  });

  // Gerege's refund-first cases (a refund is a `re_…` object, seen only as its event): refund-events.test.ts.
});

describe('a new order never throws away a paid one', () => {
  it('replacing a waiting order reads it first: paid is vended, not refunded', { timeout: 120_000 }, async () => {
    // Webhooks down and a slow poller: the device has not yet learnt of the payment.
    const s = (stack = await startProviderStack({ config: { poll: { intervalMs: 60_000 } } }));
    s.sim.setFaults({ webhookOutage: true });
    const waiting = await s.placeOrder('A1');
    await waitFor(() => s.sim.records().getCalls.some((c) => c.id === waiting.invoiceId), {
      timeoutMs: 60_000,
      what: 'the first poll of the invoice',
    });
    await s.sim.pay(waiting.invoiceId!);

    const replacement = await s.call('POST', '/api/orders', { slot: 'A2' });
    expect(replacement.status).not.toBe(201);
    expect((await settled(s, waiting.orderId)).state).toBe('vended');
    expect(refundsAtProvider(s, waiting.invoiceId!)).toHaveLength(0);
    expect(s.svc.readSimLog().map((l) => l.orderId)).toEqual([waiting.orderId]);
  });

  it('after a restart, waiting orders are read before a new order is taken', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ config: { poll: { intervalMs: 60_000 } } }));
    s.sim.setFaults({ webhookOutage: true });
    const waiting = await s.placeOrder('A1');
    await s.svc.kill('SIGKILL');
    await s.sim.pay(waiting.invoiceId!);
    await s.svc.restart();

    await s.call('POST', '/api/orders', { slot: 'A2' });
    expect((await settled(s, waiting.orderId)).state).toBe('vended');
    expect(refundsAtProvider(s, waiting.invoiceId!)).toHaveLength(0);
  });
});

// Kaspi: a customer's app pays the QR's own amount, but the device trusts what Kaspi's details say was
// paid (TotalAmount), not the amount it asked for: its simulator plays a Kaspi that reports another one.
describe.each(['gerege', 'qutpay', 'qpay', 'kaspi'] as const)('%s: a payment that does not match its order', (provider) => {
  it('is refunded automatically, with an alarm, and never vended', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ provider }));
    const placed = await s.placeOrder();
    await s.sim.pay(placed.invoiceId!, { amount: 999 });

    expect((await settled(s, placed.orderId)).state).toBe('refunded');
    expect(refundsAtProvider(s, placed.invoiceId!).map((r) => r.amount)).toEqual([999]);
    expect(alarms(s, `payment_mismatch/${placed.orderId}`)).toHaveLength(1);
    expect(s.svc.readSimLog()).toHaveLength(0);
  });
});
