import type { Db } from '../store/index.js';
import { prepared } from '../store/index.js';
import { scheduleClock, type Clock } from '../util/clock.js';

/**
 * The customer's payment window, measured on this device's own clocks only.
 *
 * It opens when the invoice was made, as this device's own clock knows it
 * (`order_invoices.window_opened_at`): for an invoice the provider made for the create call, when the
 * call was sent; for a replayed key, when the attempt's key was fixed (its first call followed). It lasts the lifetime the attempt asked for (`create_request.expiresInSec`,
 * fixed with its key; Gerege confirms it as `expires_at − created`, QutPay fixes its own and the
 * device closes its invoices at this one). Both facts are the device's own durable record, so no
 * other clock enters: neither the provider's `Date` header (which may lie) nor its absolute times
 * (which are on another clock). A device clock hours off gives the customer the same window as a
 * right one.
 *
 * Within one run the window is kept on the monotonic clock from the first time it is asked about
 * (the create answer, or recovery after a restart): a wall clock that NTP moves by days afterwards
 * neither closes a fresh window nor reopens a stale one.
 */
export interface PaymentWindows {
  /**
   * Milliseconds until the window of the order's current invoice closes (negative: closed that long
   * ago); null without an invoice.
   */
  leftMs(order: WindowedOrder): number | null;
}

/** What a window is computed from: the order row as the repository reads it. */
export interface WindowedOrder {
  invoice_id: string | null;
  create_request: string | null;
  updated_at: number;
}

/** Windows remembered on the monotonic clock; beyond this the oldest are forgotten (read again from the row). */
const MAX_REMEMBERED = 1_000;

export function createPaymentWindows(deps: { db: Db; clock: Clock }, settings: { defaultTtlSec: number }): PaymentWindows {
  const mono = scheduleClock(deps.clock);
  const closesAt = new Map<string, number>();

  function ttlMsOf(order: WindowedOrder): number {
    try {
      const fixed = order.create_request ? (JSON.parse(order.create_request) as { expiresInSec?: unknown }) : null;
      if (fixed && typeof fixed.expiresInSec === 'number' && fixed.expiresInSec > 0) return fixed.expiresInSec * 1000;
    } catch {
      // A row from before the request was fixed: the settings' lifetime.
    }
    return settings.defaultTtlSec * 1000;
  }

  return {
    leftMs(order) {
      const invoiceId = order.invoice_id;
      if (invoiceId === null) return null;
      let at = closesAt.get(invoiceId);
      if (at === undefined) {
        const row = prepared(
          deps.db,
          'SELECT coalesce(window_opened_at, created_at) AS opened_at FROM order_invoices WHERE invoice_id = ?',
        ).get(invoiceId) as { opened_at: number } | undefined;
        const openedAt = row?.opened_at ?? order.updated_at;
        const ttlMs = ttlMsOf(order);
        // Never more than the whole lifetime: a wall clock set back since cannot stretch it.
        at = mono() + Math.min(openedAt + ttlMs - deps.clock.now(), ttlMs);
        closesAt.set(invoiceId, at);
        const oldest = closesAt.keys().next();
        if (closesAt.size > MAX_REMEMBERED && !oldest.done) closesAt.delete(oldest.value);
      }
      return at - mono();
    },
  };
}
