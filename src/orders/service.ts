import type { Db } from '../store/index.js';
import { durably, inTransaction } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { ErrorCodes, VendgateError, errorMessage } from '../util/errors.js';
import type { Outbox } from '../outbox/index.js';
import type { Invoice, PaymentProvider } from '../payments/types.js';
import { ProviderError } from '../payments/types.js';
import type { Ledger } from '../ledger/index.js';
import type { Settings } from '../settings/index.js';
import { createOrderRepository, type OrderRow } from './repository.js';
import { IN_PROGRESS_STATES } from './state.js';

export interface OrderInput {
  source: 'kiosk' | 'button' | 'mdb' | 'mqtt' | 'cli';
  /** Vending: a catalog slot. */
  slot?: string;
  /** MDB: the machine names the item and the amount itself. */
  item?: string;
  amount?: number;
}

/** Tracks whether the provider answers; the screen shows `offline` and no orders are taken while not. */
export interface ProviderHealth {
  reachable: boolean;
  lastError: string | null;
  lastOkAt: number | null;
  ok(): void;
  failed(err: unknown): void;
}

export function createProviderHealth(clock: Clock): ProviderHealth {
  return {
    reachable: true,
    lastError: null,
    lastOkAt: null,
    ok() { this.reachable = true; this.lastError = null; this.lastOkAt = clock.now(); },
    failed(err) {
      if (err instanceof ProviderError && !err.transient) return;
      this.reachable = false;
      this.lastError = errorMessage(err);
    },
  };
}

export interface OrderServiceDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
  provider: PaymentProvider;
  ledger: Ledger;
  health: ProviderHealth;
  deviceId: string;
  dbId: string;
  /** Why the device takes no orders right now (inhibit, fire alarm, operator), or null. */
  outOfService: () => string | null;
  crashPoint?: (name: string) => void;
  onChange?: () => void;
  /** An order closed without payment (MDB denies the machine's session). */
  onClosedUnpaid?: (order: OrderRow, reason: string) => void;
  /** The live catalog (remote versions, stock, jams). Absent: settings.device.catalog, always for sale. */
  catalog?: CatalogPort;
}

/** What the order service asks the catalog (src/catalog/): price and name of a slot, or why not. */
export interface CatalogPort {
  /** The item to price an order from; throws UNKNOWN_SLOT (400), SOLD_OUT / SLOT_JAMMED (409). */
  forSale(slot: string | undefined): { slot: string; name: string; price: number };
  /** MDB: throws SOLD_OUT / SLOT_JAMMED for a listed item that cannot be sold now. */
  assertSellable(item: string): void;
  item(slot: string): { name: string } | undefined;
}

export function createOrderService(deps: OrderServiceDeps, settings: Pick<Readonly<Settings>, 'device' | 'provider'>) {
  const { db, clock, outbox, provider, ledger, health } = deps;
  const log = deps.logger.child({ module: 'orders' });
  const repo = createOrderRepository({ db, clock });
  const crash = deps.crashPoint ?? (() => {});
  const changed = () => deps.onChange?.();

  function describeItem(input: OrderInput): { slot: string | null; itemName: string; amount: number } {
    if (input.source === 'mdb') {
      if (!input.item || !Number.isInteger(input.amount) || (input.amount ?? 0) <= 0) {
        throw new VendgateError(ErrorCodes.BAD_REQUEST, 'a machine vend request needs an item and a positive amount', { httpStatus: 400 });
      }
      deps.catalog?.assertSellable(input.item);
      const listed = deps.catalog ? deps.catalog.item(input.item) : settings.device.catalog.find((c) => c.slot === input.item);
      return { slot: input.item, itemName: listed?.name ?? `item ${input.item}`, amount: input.amount! };
    }
    if (settings.device.mode === 'turnstile') {
      return { slot: null, itemName: 'pass', amount: settings.device.fare! };
    }
    if (deps.catalog) {
      const item = deps.catalog.forSale(input.slot);
      return { slot: item.slot, itemName: item.name, amount: item.price };
    }
    const item = settings.device.catalog.find((c) => c.slot === input.slot);
    if (!item) {
      const slots = settings.device.catalog.map((c) => c.slot).join(', ');
      throw new VendgateError(ErrorCodes.UNKNOWN_SLOT, input.slot ? `unknown slot "${input.slot}"; this machine has: ${slots}` : `choose a slot: ${slots}`, { httpStatus: 400 });
    }
    return { slot: item.slot, itemName: item.name, amount: item.price };
  }

  function requestFor(order: OrderRow) {
    return {
      idempotencyKey: order.idempotency_key,
      reference: order.reference,
      amount: order.amount,
      currency: order.currency,
      description: order.item_name,
      expiresInSec: settings.provider.invoiceTtlSec,
      captureMode: order.capture_mode,
    };
  }

  /** A returned invoice that does not match the order means the key was used before for something else. */
  function mismatch(order: OrderRow, invoice: Invoice): string | null {
    if (invoice.reference !== order.reference) return `reference ${invoice.reference} ≠ ${order.reference}`;
    if (invoice.amount !== order.amount) return `amount ${invoice.amount} ≠ ${order.amount}`;
    if (invoice.currency !== order.currency) return `currency ${invoice.currency} ≠ ${order.currency}`;
    if (invoice.livemode !== (order.livemode === 1)) return `livemode ${invoice.livemode} ≠ ${order.livemode === 1}`;
    return null;
  }

  function fail(order: OrderRow, code: string, message: string): void {
    inTransaction(db, () => {
      if (repo.transition(order.id, 'creating', 'failed', message, { errorCode: code, errorMessage: message })) {
        outbox.event('order.failed', { orderId: order.id, reference: order.reference, code, message });
      }
    });
    changed();
  }

  /** Calls the provider for an order in `creating` (new, or left by a crash) and records the result. */
  async function obtainInvoice(order: OrderRow): Promise<OrderRow> {
    let invoice: Invoice;
    try {
      invoice = await provider.createInvoice(requestFor(order));
      health.ok();
    } catch (err) {
      health.failed(err);
      if (err instanceof ProviderError && err.kind === 'conflict') {
        inTransaction(db, () => outbox.raiseAlarm('idempotency_conflict', 'critical', 'the provider reports a reused idempotency key with a different body: a programming or configuration error', { orderId: order.id, reference: order.reference }));
        fail(order, ErrorCodes.IDEMPOTENCY_CONFLICT, err.message);
        throw new VendgateError(ErrorCodes.IDEMPOTENCY_CONFLICT, 'the payment provider refused the order; the operator has been alerted', { httpStatus: 502, cause: err });
      }
      const transient = !(err instanceof ProviderError) || err.transient;
      const code = transient ? ErrorCodes.PROVIDER_UNAVAILABLE : ErrorCodes.PROVIDER_REJECTED;
      fail(order, code, errorMessage(err));
      log.warn({ err, orderId: order.id }, 'invoice not created');
      throw new VendgateError(code, transient ? 'the payment service is not reachable; please try again' : `the payment provider refused the order: ${errorMessage(err)}`, { httpStatus: transient ? 503 : 502, cause: err });
    }
    crash('after_invoice_create');
    const wrong = mismatch(order, invoice);
    if (wrong) {
      inTransaction(db, () => outbox.raiseAlarm(`invoice_mismatch/${order.id}`, 'critical', 'the provider returned an invoice that does not match the order; its QR was not shown', { orderId: order.id, reference: order.reference, invoiceId: invoice.id, detail: wrong }));
      fail(order, ErrorCodes.INVOICE_MISMATCH, `provider returned a different invoice: ${wrong}`);
      throw new VendgateError(ErrorCodes.INVOICE_MISMATCH, 'the payment provider returned an unexpected invoice; the operator has been alerted', { httpStatus: 502 });
    }
    inTransaction(db, () => {
      repo.attachInvoice(order.id, invoice);
      if (repo.transition(order.id, 'creating', 'awaiting_payment', invoice.replayed ? 'invoice recovered (replayed key)' : 'invoice created')) {
        outbox.event('invoice.created', { orderId: order.id, reference: order.reference, invoiceId: invoice.id, amount: order.amount, currency: order.currency, expiresAt: new Date(invoice.expiresAt).toISOString() });
      }
    });
    // A replayed invoice may already be paid (crash after the customer paid): the ledger decides.
    ledger.observe({ invoiceId: invoice.id, status: invoice.status, providerStatus: invoice.providerStatus, livemode: invoice.livemode, amount: invoice.amount, currency: invoice.currency, channel: 'create' });
    changed();
    return repo.get(order.id)!;
  }

  async function cancelAtProvider(order: OrderRow): Promise<void> {
    if (!order.invoice_id) return;
    try {
      const invoice = await provider.cancelInvoice(order.invoice_id);
      ledger.observe({ invoiceId: invoice.id, status: invoice.status, providerStatus: invoice.providerStatus, livemode: invoice.livemode, amount: invoice.amount, currency: invoice.currency, channel: 'expiry' });
    } catch (err) {
      // The poller keeps watching the invoice for a late payment; a cancel is an optimisation.
      log.warn({ err, orderId: order.id, invoiceId: order.invoice_id }, 'cancel at the provider failed');
    }
  }

  function closeUnpaid(order: OrderRow, to: 'canceled' | 'expired', reason: string): boolean {
    const closed = inTransaction(db, () => {
      if (!repo.transition(order.id, order.state, to, reason)) return false;
      outbox.event(to === 'expired' ? 'order.expired' : 'order.canceled', { orderId: order.id, reference: order.reference, reason });
      return true;
    });
    if (closed) {
      deps.onClosedUnpaid?.(order, reason);
      changed();
    }
    return closed;
  }

  return {
    async create(input: OrderInput): Promise<OrderRow> {
      const reason = deps.outOfService();
      if (reason) throw new VendgateError(ErrorCodes.OUT_OF_SERVICE, `out of service: ${reason}`, { httpStatus: 503 });
      if (!health.reachable) throw new VendgateError(ErrorCodes.PROVIDER_UNAVAILABLE, 'the payment service is not reachable; please try again shortly', { httpStatus: 503 });
      const item = describeItem(input);
      if (repo.inStates(IN_PROGRESS_STATES).length > 0) {
        throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'the machine is delivering an order; please wait', { httpStatus: 409 });
      }
      if (repo.inStates(['creating']).length > 0) {
        throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'an order is being created; please wait', { httpStatus: 409 });
      }
      // One order at a time: a new choice replaces the one waiting for payment.
      for (const open of repo.inStates(['awaiting_payment'])) {
        if (closeUnpaid(open, 'canceled', 'replaced by a new order')) void cancelAtProvider(open);
      }
      const order = durably(db, () => {
        const row = repo.insert({ source: input.source, slot: item.slot, itemName: item.itemName, amount: item.amount, currency: settings.device.currency, livemode: settings.device.livemode, provider: provider.name, captureMode: settings.provider.captureMode }, deps.deviceId, deps.dbId);
        outbox.event('order.created', { orderId: row.id, reference: row.reference, source: row.source, slot: row.slot, amount: row.amount, currency: row.currency });
        outbox.count('orders_created');
        return row;
      });
      crash('after_order_insert');
      changed();
      log.info({ orderId: order.id, reference: order.reference, slot: order.slot, amount: order.amount }, 'order created');
      return obtainInvoice(order);
    },

    get(orderId: number): OrderRow | undefined {
      return repo.get(orderId);
    },

    async cancel(orderId: number, by = 'customer'): Promise<OrderRow> {
      const order = repo.get(orderId);
      if (!order) throw new VendgateError(ErrorCodes.ORDER_NOT_FOUND, `no order ${orderId}`, { httpStatus: 404 });
      if (order.state === 'canceled') return order;
      if (order.state !== 'awaiting_payment') {
        throw new VendgateError(ErrorCodes.ORDER_STATE, `order ${orderId} is ${order.state} and can no longer be canceled`, { httpStatus: 409 });
      }
      if (closeUnpaid(order, 'canceled', `canceled by ${by}`)) await cancelAtProvider(order);
      return repo.get(orderId)!;
    },

    /**
     * Expires orders whose invoice ran out. One last read first: a payment made in the last second
     * is vended rather than refunded.
     */
    async expireDue(): Promise<void> {
      const now = clock.now();
      for (const order of repo.inStates(['awaiting_payment'])) {
        if (order.expires_at === null || order.expires_at > now) continue;
        try {
          const invoice = await provider.getInvoice(order.invoice_id!);
          health.ok();
          const result = ledger.observe({ invoiceId: invoice.id, status: invoice.status, providerStatus: invoice.providerStatus, livemode: invoice.livemode, amount: invoice.amount, currency: invoice.currency, channel: 'expiry' });
          if (result.outcome === 'recorded' && result.to) { changed(); continue; }
        } catch (err) {
          health.failed(err);
        }
        if (closeUnpaid(order, 'expired', 'not paid in time')) await cancelAtProvider(order);
      }
    },

    /** Start-up: orders a crash left in `creating` get their invoice with the same key (invariant 4). */
    async recover(): Promise<void> {
      for (const order of repo.inStates(['creating'])) {
        log.warn({ orderId: order.id, reference: order.reference }, 'resuming an order interrupted while its invoice was created');
        try {
          const resumed = await obtainInvoice(order);
          const ttlOver = resumed.expires_at !== null && resumed.expires_at <= clock.now();
          // The customer has long walked away from a QR that was never shown: close it.
          if (resumed.state === 'awaiting_payment' && (ttlOver || order.created_at + settings.provider.invoiceTtlSec * 1000 < clock.now())) {
            if (closeUnpaid(resumed, 'expired', 'interrupted by a restart')) await cancelAtProvider(resumed);
          }
        } catch (err) {
          log.error({ err, orderId: order.id }, 'could not resume the order');
        }
      }
    },

    list: repo.list,
    history: repo.history,
    repo,
  };
}

export type OrderService = ReturnType<typeof createOrderService>;
