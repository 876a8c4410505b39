import { describe, expect, it } from 'vitest';

import { startGeregeStack, startProviderStack, type GeregeStack } from '../techniques/chaos/stack.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { waitFor } from '../helpers/wait.js';
import { fakeClock } from './harness.js';

/**
 * A Pi without a real-time clock: the real service under libfaketime (Debian `faketime`),
 * its wall clock moved at run time through FAKETIME_TIMESTAMP_FILE (FAKETIME_NO_CACHE=1), its
 * monotonic clock left alone (FAKETIME_DONT_FAKE_MONOTONIC=1), against the Gerege (one case: QutPay)
 * simulator on the real time in this process.
 */
describe('a wall clock that is wrong or jumps', () => {
  const defer = cleanup();

  /** A Gerege stack whose wall clock starts at `offset`, and an order for A1 made on it. */
  async function orderOnClock(offset: string, deviceId: string) {
    const clock = fakeClock(defer, offset);
    const stack = defer(await startGeregeStack({ env: clock.env, config: { device: { id: deviceId } } }), stop);
    const created = await stack.call('POST', '/api/orders', { slot: 'A1' });
    expect(created.status).toBe(201);
    return { clock, stack, orderId: created.json.orderId as number, invoiceId: created.json.invoiceId as string };
  }

  /** The order paid at the provider: vended, the machine turned once for it. */
  async function paidAndVendedOnce(stack: GeregeStack, orderId: number, invoiceId: string) {
    await stack.sim.pay(invoiceId);
    expect((await stack.waitSettled(orderId)).state).toBe('vended');
    expect(stack.actuationsByOrder().get(orderId)).toBe(1);
  }

  const clockSkew = (s: GeregeStack) => s.query<{ detail: string }>("SELECT detail FROM alarms WHERE name = 'clock_skew'");
  /** The raised clock_skew's skewSec once it is within `slackSec` of `expectedSec` (the alarm is rewritten as the skew changes). */
  const skewNear = (s: GeregeStack, expectedSec: number, slackSec = 120) =>
    waitFor(
      () => {
        const [alarm] = clockSkew(s);
        if (!alarm) return null;
        const skewSec = (JSON.parse(alarm.detail) as { skewSec: number }).skewSec;
        return Math.abs(skewSec - expectedSec) < slackSec ? skewSec : null;
      },
      { timeoutMs: 15_000, what: `clock_skew with skewSec near ${expectedSec}` },
    );

  it('three hours ahead of the provider: orders are made (one invoice each), clock_skew says by how much, polling carries the payment, and the alarm clears', async () => {
    const { clock, stack, orderId, invoiceId } = await orderOnClock('+3h', 'clock-ahead');
    expect(stack.query('SELECT count(*) AS n FROM order_invoices')).toEqual([{ n: 1 }]);
    expect(stack.query("SELECT name FROM alarms WHERE name LIKE 'invoice_reused/%'")).toEqual([]);

    const [alarm] = await waitFor(() => (clockSkew(stack).length ? clockSkew(stack) : null), { timeoutMs: 15_000, what: 'clock_skew' });
    const skewSec = (JSON.parse(alarm!.detail) as { skewSec: number }).skewSec;
    expect(Math.abs(skewSec - 3 * 3600)).toBeLessThan(120);

    // Its webhooks are refused (their signature times are 3 h off); the poller reads the payment.
    await paidAndVendedOnce(stack, orderId, invoiceId);

    // NTP puts the clock right: the next provider answer clears the alarm.
    clock.set('+0');
    expect((await stack.call('POST', '/api/orders', { slot: 'A2' })).status).toBe(201);
    await waitFor(() => clockSkew(stack).length === 0, { timeoutMs: 15_000, what: 'clock_skew cleared' });
  });

  it('set back 30 days while an order waits: the poller keeps reading, and a payment made after the jump is vended', async () => {
    const { clock, stack, orderId, invoiceId } = await orderOnClock('+0', 'clock-back');

    clock.set('-30d');
    // A device behind the provider is skewed too: the next provider answer's Date header says by how much.
    expect(await skewNear(stack, -30 * 86_400)).toBeLessThan(0);
    await paidAndVendedOnce(stack, orderId, invoiceId);
  });

  it('set back 30 days while an order waits with a 30 s TTL: it still expires 30 s after it was made, open invoices are read twice as often meanwhile, and a payment made after the jump is vended once', async () => {
    // QutPay: the provider fixes its own invoice lifetime (900 s here) and the request has no field
    // for it, so nothing at the provider closes this order at 30 s: only the device's own expiry can,
    // and after the jump only its monotonic clock still knows that 30 s have passed. (With Gerege the
    // provider would expire the intent at the same moment and the poller alone would close the order.)
    const clock = fakeClock(defer, '+0');
    const ttlSec = 30;
    const intervalMs = 2_000;
    const s = defer(
      await startProviderStack({
        provider: 'qutpay',
        env: clock.env,
        config: { device: { id: 'clock-back-ttl' }, provider: { invoiceTtlSec: ttlSec }, poll: { intervalMs } },
      }),
      stop,
    );
    const madeAt = Date.now();
    const created = await s.call('POST', '/api/orders', { slot: 'A1' });
    expect(created.status).toBe(201);
    const orderId = created.json.orderId as number;
    const invoiceId = created.json.invoiceId as string;
    const reads = () =>
      s.sim
        .records()
        .getCalls.filter((call) => call.id === invoiceId)
        .map((call) => call.at);
    const state = (id: number) => s.query<{ state: string }>('SELECT state FROM orders WHERE id = ?', id)[0]?.state;

    // A few reads on a clock that agrees with the provider's, then NTP sets the device back 30 days.
    await waitFor(() => reads().length >= 5, { timeoutMs: 20_000, what: 'five reads before the jump' });
    // The simulator answers in this process: on a busy loop, the fifth read and this check run in
    // the same millisecond, so a read stamped `jumpedAt` is one of the five before the jump.
    const jumpedAt = Date.now();
    clock.set('-30d');
    expect(await skewNear(s, -30 * 86_400)).toBeLessThan(0);
    const skewedFrom = Date.now();
    expect(state(orderId)).toBe('awaiting_payment');

    // The order runs out 30 s after it was made on the real clock, though the wall clock says it was
    // made 30 days from now; the device closes it itself (its reason, and a cancel at the provider).
    const expiredSeenAt = await waitFor(() => (state(orderId) === 'expired' ? Date.now() : null), {
      timeoutMs: 60_000,
      what: 'the order expired',
    });
    expect(expiredSeenAt - madeAt).toBeGreaterThanOrEqual(ttlSec * 1000 - 1_000);
    expect(expiredSeenAt - madeAt).toBeLessThan(ttlSec * 1000 + 10_000);
    expect(s.query('SELECT to_state, reason FROM order_history WHERE order_id = ? AND to_state = ?', orderId, 'expired')).toEqual([
      { to_state: 'expired', reason: 'not paid in time' },
    ]);
    expect(s.sim.records().invoices.find((invoice) => invoice.id === invoiceId)?.status).toBe('cancelled');

    // While the skew is beyond the webhook tolerance the open invoice was read every interval / 2.
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const gaps = (times: number[]) => times.slice(1).map((at, i) => at - times[i]!);
    const before = gaps(reads().filter((at) => at <= jumpedAt));
    const skewed = gaps(reads().filter((at) => at > skewedFrom && at < expiredSeenAt - 1_000));
    expect(before.length).toBeGreaterThanOrEqual(4);
    expect(skewed.length).toBeGreaterThanOrEqual(8);
    expect(median(before)).toBeGreaterThanOrEqual(intervalMs - 100);
    expect(median(skewed)).toBeGreaterThanOrEqual(intervalMs / 2 - 100);
    expect(median(skewed)).toBeLessThan(0.75 * median(before));

    // Still 30 days behind: a new order is made, and its payment (the webhook refused, the poller reads it) is vended once.
    const next = await s.call('POST', '/api/orders', { slot: 'A2' });
    expect(next.status).toBe(201);
    await s.sim.pay(next.json.invoiceId as string);
    expect((await s.waitSettled(next.json.orderId as number)).state).toBe('vended');
    expect(s.actuationsByOrder().get(next.json.orderId as number)).toBe(1);
    expect(s.actuationsByOrder().get(orderId)).toBeUndefined();
  });

  it('ninety days behind the provider: clock_skew says by how much although no webhook signature holds, and polling carries the payment', async () => {
    const { stack, orderId, invoiceId } = await orderOnClock('-90d', 'clock-behind');
    expect(await skewNear(stack, -90 * 86_400)).toBeLessThan(0);

    await paidAndVendedOnce(stack, orderId, invoiceId);
  });

  it('set forward 30 days while an order waits: the fresh order is not expired, and its payment is vended', async () => {
    const { clock, stack, orderId, invoiceId } = await orderOnClock('+0', 'clock-forward');

    clock.set('+30d');
    // The next provider answer (the poller's read) shows the jump: 30 days of skew.
    await waitFor(() => (clockSkew(stack).length ? true : null), { timeoutMs: 15_000, what: 'clock_skew after the jump' });
    expect(stack.query<{ state: string }>('SELECT state FROM orders WHERE id = ?', orderId)).toEqual([{ state: 'awaiting_payment' }]);
    await paidAndVendedOnce(stack, orderId, invoiceId);
  });
});
