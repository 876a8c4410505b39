import { describe, expect, it } from 'vitest';

import { startProviderStack, type ProviderStack } from '../techniques/chaos/stack.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { waitFor } from '../helpers/wait.js';
import { fakeClock } from './harness.js';

/**
 * This device's own clock hours ahead of the provider's (a Pi without a real-time clock that came
 * up with a stale or wrong time), from the first instant of the process: the real service under
 * libfaketime (Debian `faketime`), against the simulator on the real time. It must start at once,
 * say `clock_skew` quickly, and sell: one invoice per order, the payment vended, never refunded as
 * "late" because its clock says the window closed hours ago.
 */
describe("this device's clock six hours ahead from the start", () => {
  const defer = cleanup();

  const clockSkew = (s: ProviderStack) => s.query<{ detail: string }>("SELECT detail FROM alarms WHERE name = 'clock_skew'");

  for (const provider of ['gerege', 'qutpay'] as const) {
    it(`${provider}: ready within the usual start time, clock_skew within seconds, and orders sold (one invoice each, vended, none refunded)`, async () => {
      const startedAt = Date.now();
      const env = fakeClock(defer, '+6h').env;
      const s = defer(await startProviderStack({ provider, env, config: { device: { id: `clock-6h-${provider}` } } }), stop);
      // The service helper waits for `vendgate ready`: requests before it get 503 VG_ERR_STARTING.
      const readyMs = Date.now() - startedAt;
      expect(readyMs).toBeLessThan(15_000);

      const [alarm] = await waitFor(() => (clockSkew(s).length ? clockSkew(s) : null), { timeoutMs: 10_000, what: 'clock_skew' });
      expect(Math.abs((JSON.parse(alarm!.detail) as { skewSec: number }).skewSec - 6 * 3600)).toBeLessThan(120);

      for (const slot of ['A1', 'A2']) {
        const created = await s.call('POST', '/api/orders', { slot });
        expect(created.status, JSON.stringify(created.json)).toBe(201);
        // The screen's countdown, on the device's own clock, is not over before it began.
        expect(Date.parse(created.json.expiresAt as string) - Date.now()).toBeGreaterThan(6 * 3_600_000);
        const screen = (await s.call('GET', '/api/state')).json as { now: string; order: { expiresAt: string } };
        expect(Date.parse(screen.order.expiresAt)).toBeGreaterThan(Date.parse(screen.now));
        await s.sim.pay(created.json.invoiceId as string);
        expect((await s.waitSettled(created.json.orderId as number)).state).toBe('vended');
        expect(s.actuationsByOrder().get(created.json.orderId as number)).toBe(1);
      }
      expect(s.query('SELECT count(*) AS n FROM order_invoices')).toEqual([{ n: 2 }]);
      expect(s.query('SELECT count(*) AS n FROM refunds')).toEqual([{ n: 0 }]);
      expect(s.query("SELECT name FROM alarms WHERE name LIKE 'invoice_reused/%'")).toEqual([]);
    });
  }
});
