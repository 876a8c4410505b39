import { toIso } from '../util/clock.js';
import type { OrderRow } from './repository.js';
import { readAppLinks, ANY_APP_SCHEME } from './app-links.js';
import type { OrderState } from './state.js';

/** The public shape of an order (local API, CLI, MQTT command results). */
export function orderView(order: OrderRow, history: { at: string; from: string | null; to: string; reason: string }[]) {
  return {
    orderId: order.id,
    reference: order.reference,
    state: order.state,
    source: order.source,
    slot: order.slot,
    itemName: order.item_name,
    amount: order.amount,
    currency: order.currency,
    provider: order.provider,
    invoiceId: order.invoice_id,
    payUrl: order.pay_url,
    /** The provider's bank-app deep links (QPay), as stored; the kiosk narrows them to its allowed schemes. */
    appLinks: readAppLinks(order.app_links ?? null, ANY_APP_SCHEME),
    expiresAt: toIso(order.expires_at),
    createdAt: toIso(order.created_at)!,
    paidAt: toIso(order.paid_at),
    vendedAt: toIso(order.vended_at),
    refundedAt: toIso(order.refunded_at),
    errorCode: order.error_code,
    history,
  };
}

/**
 * What the screen shows: the order's own state (an authorization looks like a payment to the
 * customer), or the device's when no order is on screen. The kiosk's `Phase` is the same set.
 */
export type ScreenPhase = Exclude<OrderState, 'authorized'> | 'idle' | 'out_of_service' | 'offline';

/** How long an uncertain vend keeps "please contact the operator" on screen. */
const UNCERTAIN_SCREEN_MS = 60_000;

/**
 * What the customer's screen shows: the latest order while it is open or in progress, or for a few
 * seconds after it ended (until `until`); otherwise idle, out of service or offline.
 */
export function screenPhase(input: {
  latest: OrderRow | undefined;
  now: number;
  resultScreenMs: number;
  outOfService: string | null;
  providerReachable: boolean;
}): { phase: ScreenPhase; order: OrderRow | null; until?: number } {
  const { latest, now } = input;
  if (latest) {
    const active = ['creating', 'awaiting_payment', 'paid', 'authorized', 'vending', 'vend_failed', 'refunding'].includes(latest.state);
    const shownFor = latest.state === 'vend_uncertain' ? UNCERTAIN_SCREEN_MS : input.resultScreenMs;
    if (active || now - latest.updated_at < shownFor) {
      const phase: ScreenPhase = latest.state === 'authorized' ? 'paid' : latest.state;
      // A finished order leaves the screen by the clock alone: `until` says when, so followers can look again.
      return active ? { phase, order: latest } : { phase, order: latest, until: latest.updated_at + shownFor };
    }
  }
  if (input.outOfService) return { phase: 'out_of_service', order: null };
  if (!input.providerReachable) return { phase: 'offline', order: null };
  return { phase: 'idle', order: null };
}
