import { afterEach, describe, expect, it } from 'vitest';
import { startProviderStack, type OrderAnswer, type ProviderStack } from '../chaos/stack.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * QPay, black-box: the real service against the QPay simulator over HTTP. QPay's callbacks are not
 * signed and its create is not known to be idempotent (docs/providers.md, "QPay"): what the device
 * does about each is checked here from the outside — the goods that came out, the calls QPay saw.
 */

let stack: ProviderStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

async function settled(s: ProviderStack, orderId: number, states: string[]): Promise<OrderAnswer> {
  return waitFor(
    async () => {
      const current = await s.order(orderId);
      return current && states.includes(current.state) ? current : null;
    },
    { what: `order ${orderId} to be ${states.join(' or ')}` },
  );
}

function callback(s: ProviderStack, reference: string, init: RequestInit = { method: 'POST' }) {
  return fetch(`${s.svc.webhookUrl}/webhooks/qpay?ref=${encodeURIComponent(reference)}`, init);
}

describe('qpay: callbacks are hints', () => {
  it('forged callbacks before the payment vend nothing; the real one after it vends once', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ provider: 'qpay', config: { poll: { intervalMs: 5_000, maxBackoffMs: 5_000 } } }));
    const placed = await s.placeOrder();
    expect(placed.state).toBe('awaiting_payment');
    const before = s.sim.records().getCalls.length;
    for (let i = 0; i < 20; i += 1) {
      const answer = await callback(
        s,
        placed.reference,
        i % 2 === 0 ? { method: 'GET' } : { method: 'POST', body: '{"payment_status":"PAID"}' },
      );
      expect(answer.status).toBe(200);
    }
    // Each forged call could cause a read at most; the reads say unpaid, so nothing moves.
    await waitFor(() => s.sim.records().getCalls.length > before, { timeoutMs: 15_000, what: 'a read caused by a callback' });
    expect((await s.order(placed.orderId))?.state).toBe('awaiting_payment');
    expect(s.svc.readSimLog()).toHaveLength(0);
    // A flood is bounded: one stored hint per order per window, not one per request.
    expect(s.query('SELECT event_id FROM webhook_events WHERE provider = ?', 'qpay').length).toBeLessThanOrEqual(6);

    await s.sim.pay(placed.invoiceId!);
    expect((await settled(s, placed.orderId, ['vended'])).state).toBe('vended');
    await callback(s, placed.reference);
    await s.sim.waitForDeliveriesIdle();
    expect(s.actuationsByOrder().get(placed.orderId)).toBe(1);
  });

  it('a callback for a reference of no order here is refused, stored nowhere, and moves nothing', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ provider: 'qpay' }));
    for (let i = 0; i < 10; i += 1) expect((await callback(s, `made-up-${i}`)).status).toBe(400);
    expect(s.query('SELECT event_id FROM webhook_events')).toHaveLength(0);
    expect((await callback(s, 'bad ref with spaces')).status).toBe(400);
    expect((await fetch(`${s.svc.webhookUrl}/webhooks/qpay`, { method: 'POST' })).status).toBe(400);
    expect(s.svc.readSimLog()).toHaveLength(0);
  });
});

describe('qpay: a create whose answer was lost', () => {
  it('fails the order with "try again", never sends that number again, and the next order sells', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ provider: 'qpay' }));
    s.sim.setFaults({ lostResponse: 1 });
    const lost = await s.call('POST', '/api/orders', { slot: 'A1' });
    s.sim.setFaults({ lostResponse: 0 });
    expect(lost.status).toBeGreaterThanOrEqual(500);
    expect(JSON.stringify(lost.json)).toMatch(/try again/);
    const calls = s.sim.records().createCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ outcome: 'fault:lostResponse', committed: 'created' });

    // The device marked QPay unreachable on the lost answer; the next order is taken once a read succeeds.
    const next = await waitFor(
      async () => {
        const answer = await s.call('POST', '/api/orders', { slot: 'A1' });
        return answer.status === 201 ? (answer.json as OrderAnswer) : null;
      },
      { what: 'QPay reachable again for a new order' },
    );
    await s.sim.pay(next.invoiceId!);
    expect((await settled(s, next.orderId, ['vended'])).state).toBe('vended');
    const numbers = s.sim.records().createCalls.map((c) => c.idempotencyKey);
    expect(new Set(numbers).size).toBe(numbers.length);
    // The invoice behind the lost answer was never shown: still open, unpaid, nothing vended for it.
    expect(s.svc.readSimLog()).toHaveLength(1);
  });
});

describe('qpay: the device is off when the customer pays', () => {
  it('after the restart it reads the invoice and vends exactly once', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ provider: 'qpay' }));
    const placed = await s.placeOrder();
    await s.svc.kill('SIGKILL');
    await s.sim.pay(placed.invoiceId!);
    await s.svc.restart();
    expect((await settled(s, placed.orderId, ['vended'])).state).toBe('vended');
    await s.sim.waitForDeliveriesIdle();
    expect(s.actuationsByOrder().get(placed.orderId)).toBe(1);
  });
});

describe('qpay: a refund whose answer is unknown', () => {
  it('is read before anything is sent again: one payment returned once', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ provider: 'qpay', faults: { refundUnknown: 1 } }));
    const placed = await s.placeOrder();
    // Another sum than the order's is refunded, never vended (the core's rule).
    await s.sim.pay(placed.invoiceId!, { amount: 999 });
    await waitFor(() => s.sim.records().refundUnknown.length > 0, { what: 'a refund answered unknown' });
    s.sim.setFaults({ refundUnknown: 0 });
    expect((await settled(s, placed.orderId, ['refunded'])).state).toBe('refunded');
    expect(s.sim.records().refunds.filter((r) => r.invoiceId === placed.invoiceId)).toHaveLength(1);
    expect(s.svc.readSimLog()).toHaveLength(0);
  });
});
