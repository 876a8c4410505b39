import { afterEach, describe, expect, it } from 'vitest';

import { startHttpProxy, type HttpProxy } from '../helpers/http-proxy.js';
import { startProviderStack, type ProviderStack } from '../techniques/chaos/stack.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A provider front end whose `Date` header lies (2 h ahead, 2 h behind) while this device's clock and
 * the provider's own timestamps (Gerege `created`/`expires_at`, QutPay `expiresAt`) are right. Beside
 * it, a control gateway whose header tells the truth takes the same orders. The header may raise
 * `clock_skew`; it must not make a new invoice, shorten or lengthen a payment window, or refund.
 */
const HOUR = 3_600_000;

interface Side {
  stack: ProviderStack;
  proxy: HttpProxy;
}

describe('a lying Date header beside a truthful one', () => {
  const sides: Side[] = [];
  afterEach(async () => {
    for (const side of sides.splice(0)) {
      await side.stack.stop();
      await side.proxy.stop();
    }
  });

  async function side(
    provider: 'gerege' | 'qutpay',
    dateOffsetMs: number,
    id: string,
    config: Record<string, unknown> = {},
  ): Promise<Side> {
    const proxy = await startHttpProxy({ dateOffsetMs });
    try {
      const stack = await startProviderStack({ provider, httpProxy: proxy, config: { device: { id }, ...config } });
      const made = { stack, proxy };
      sides.push(made);
      return made;
    } catch (err) {
      await proxy.stop();
      throw err;
    }
  }

  const skewAlarm = (s: ProviderStack) => s.query<{ detail: string }>("SELECT detail FROM alarms WHERE name = 'clock_skew'");
  const reusedAlarms = (s: ProviderStack) => s.query("SELECT name FROM alarms WHERE name LIKE 'invoice_reused/%'");
  /** Each order's end, its actuations and the refunds it got: what the customer and the operator see of the money. */
  const outcome = (s: ProviderStack) => {
    const actuations = s.actuationsByOrder();
    return s
      .query<{ id: number; state: string; invoices: number; refunds: number }>(
        `SELECT o.id, o.state, (SELECT count(*) FROM order_invoices oi WHERE oi.order_id = o.id) AS invoices,
                (SELECT count(*) FROM refunds r WHERE r.order_id = o.id) AS refunds
           FROM orders o ORDER BY o.id`,
      )
      .map((row) => ({ ...row, actuations: actuations.get(row.id) ?? 0 }));
  };

  for (const provider of ['gerege', 'qutpay'] as const) {
    it(`${provider}: a header 2 h ahead makes no second invoice and refunds no payment made at once; clock_skew says so`, async () => {
      const [control, lying] = await Promise.all([
        side(provider, 0, `date-ok-${provider}`),
        side(provider, 2 * HOUR, `date-ahead-${provider}`),
      ]);
      for (const { stack } of [control, lying]) {
        for (const slot of ['A1', 'A2', 'A1', 'A2']) {
          const created = await stack.call('POST', '/api/orders', { slot });
          expect(created.status, JSON.stringify(created.json)).toBe(201);
          await stack.sim.pay(created.json.invoiceId as string);
          expect((await stack.waitSettled(created.json.orderId as number)).state).toBe('vended');
        }
        expect(reusedAlarms(stack)).toEqual([]);
      }
      expect(outcome(lying.stack)).toEqual(outcome(control.stack));
      expect(outcome(lying.stack).map((o) => [o.state, o.invoices, o.actuations, o.refunds])).toEqual(Array(4).fill(['vended', 1, 1, 0]));

      // The header is heard: the alarm names the skew it claims, on the lying side only.
      const [alarm] = await waitFor(() => (skewAlarm(lying.stack).length ? skewAlarm(lying.stack) : null), {
        timeoutMs: 15_000,
        what: 'clock_skew',
      });
      expect(Math.abs((JSON.parse(alarm!.detail) as { skewSec: number }).skewSec + 7_200)).toBeLessThan(60);
      expect(skewAlarm(control.stack)).toEqual([]);
    });
  }

  it('gerege: a header 2 h behind does not keep a window open: a payment first seen after expiry and grace is refunded, as beside it', async () => {
    const ttlSec = 30;
    const config = { provider: { invoiceTtlSec: ttlSec }, poll: { lateGraceSec: 0 } };
    const [control, lying] = await Promise.all([
      side('gerege', 0, 'date-ok-late', config),
      side('gerege', -2 * HOUR, 'date-behind-late', config),
    ]);
    const orders = await Promise.all(
      [control, lying].map(async ({ stack, proxy }) => {
        const created = await stack.call('POST', '/api/orders', { slot: 'A1' });
        expect(created.status, JSON.stringify(created.json)).toBe(201);
        // The customer pays at once, but the device cannot read the provider until the window and
        // the grace are over (its reads, its webhook worker's reads and its cancel are cut).
        proxy.refuse(/^\/payment-intents/);
        await stack.sim.pay(created.json.invoiceId as string);
        return created.json.orderId as number;
      }),
    );
    const madeAt = Date.now();
    await waitFor(() => Date.now() - madeAt > (ttlSec + 5) * 1000, {
      timeoutMs: (ttlSec + 30) * 1000,
      what: 'the window and the grace to pass',
    });
    for (const { proxy } of [control, lying]) proxy.refuse(null);
    const settled = await Promise.all([control, lying].map(({ stack }, i) => stack.waitSettled(orders[i]!, 60_000)));
    expect(settled.map((o) => o.state)).toEqual(['refunded', 'refunded']);
    expect(outcome(lying.stack)).toEqual(outcome(control.stack));
    expect(outcome(lying.stack)).toEqual([{ id: 1, state: 'refunded', invoices: 1, refunds: 1, actuations: 0 }]);
    const [alarm] = await waitFor(() => (skewAlarm(lying.stack).length ? skewAlarm(lying.stack) : null), {
      timeoutMs: 15_000,
      what: 'clock_skew',
    });
    expect(Math.abs((JSON.parse(alarm!.detail) as { skewSec: number }).skewSec - 7_200)).toBeLessThan(60);
  });
});
