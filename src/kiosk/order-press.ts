import type { CreatedOrder, KioskOrders } from './types.js';
import { ErrorCodes, VendgateError, type Clock } from '../util/index.js';

export interface OrderPressSettings {
  /** A press for the same item within this of the last order returns that order. 0: off. */
  doublePressWindowMs: number;
  /** Orders passed to the order service at most per rolling minute. */
  ordersPerMinute: number;
}

export const ORDER_PRESS_DEFAULTS: Readonly<OrderPressSettings> = Object.freeze({ doublePressWindowMs: 3_000, ordersPerMinute: 10 });

const MINUTE_MS = 60_000;

export class OrderRateLimitError extends VendgateError {
  readonly retryAfterSec: number;
  constructor(limit: number, retryAfterSec: number) {
    super(ErrorCodes.RATE_LIMITED, `too many orders: at most ${limit} a minute; try again in ${retryAfterSec} s`, {
      details: { retryAfterSec },
    });
    this.retryAfterSec = retryAfterSec;
  }
}

/**
 * Between the order button and the order service. Every order the service creates is an invoice
 * at the provider, counted against the merchant's limits, so a double press (or a page that
 * retries) must not make a second one: a press for the same item while the first is being
 * created, or within the window after it while it still waits for payment, gets the same order
 * and the same pay URL. Beyond that, creation is rate-limited.
 */
export function createOrderPress(deps: { orders: KioskOrders; clock: Clock }, settings: OrderPressSettings = ORDER_PRESS_DEFAULTS) {
  let inFlight: { key: string; promise: Promise<CreatedOrder> } | null = null;
  let last: { key: string; at: number; created: CreatedOrder } | null = null;
  const started: number[] = [];

  function stillOpen(created: CreatedOrder): boolean {
    const current = deps.orders.get(created.orderId);
    return current !== null && current.state === 'awaiting_payment' && current.payUrl === created.payUrl;
  }

  return {
    /** `repeated`: this press returned an earlier order instead of creating one. */
    async press(input: { slot?: string }): Promise<{ created: CreatedOrder; repeated: boolean }> {
      const key = input.slot ?? '';
      if (inFlight?.key === key) return { created: await inFlight.promise, repeated: true };
      const now = deps.clock.now();
      if (last && last.key === key && now - last.at <= settings.doublePressWindowMs && stillOpen(last.created)) {
        return { created: last.created, repeated: true };
      }
      while (started.length > 0 && now - started[0]! >= MINUTE_MS) started.shift();
      if (started.length >= settings.ordersPerMinute) {
        throw new OrderRateLimitError(settings.ordersPerMinute, Math.max(1, Math.ceil((started[0]! + MINUTE_MS - now) / 1000)));
      }
      started.push(now);
      const promise = deps.orders.create(input.slot === undefined ? { source: 'kiosk' } : { slot: input.slot, source: 'kiosk' });
      inFlight = { key, promise };
      try {
        const created = await promise;
        last = { key, at: deps.clock.now(), created };
        return { created, repeated: false };
      } finally {
        if (inFlight?.promise === promise) inFlight = null;
      }
    },
  };
}
