import type { Db } from '../store/index.js';
import { durably, inTransaction, isStorageError, type StorageFault } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { ErrorCodes, VendgateError, errorMessage } from '../util/errors.js';
import type { Outbox } from '../outbox/index.js';
import type { Invoice, PaymentProvider, ProviderCallOutcome } from '../payments/types.js';
import { observationOf, ProviderError } from '../payments/types.js';
import { selectionOn, type Settings } from '../settings/index.js';
import type { CreateRequestFields, OrderHistoryEntry, OrderListFilter, OrderRepository, OrderRow } from './repository.js';
import type { OrderState } from './state.js';
import { IN_PROGRESS_STATES, decideCreateAnswer } from './decide.js';
import { createTransitions } from './transitions.js';
import type { ObservePort } from './observe-port.js';
import { createPaymentWindows, type PaymentWindows } from './window.js';
import { createProvenOffset } from './proven-offset.js';
import { priceMdbRequest } from './mdb-price.js';

/** A provider's clock may run this far from ours before a created time says "not made by us". */
const CLOCK_SLACK_MS = 5 * 60_000;
/** Attempts per order when the provider keeps answering with invoices the order did not make. */
const MAX_ATTEMPTS = 3;

export interface OrderInput {
  source: 'kiosk' | 'button' | 'mdb' | 'mqtt' | 'cli';
  /** Vending: a catalog slot. */
  slot?: string;
  /** MDB: the machine names the item and the amount itself. */
  item?: string;
  amount?: number;
  /** MDB always idle: the machine waits this long for the approval; the invoice runs out no later. */
  expiresInSec?: number;
}

/** Tracks whether the provider answers; the screen shows `offline` and no orders are taken while not. */
export interface ProviderHealth {
  reachable: boolean;
  lastError: string | null;
  lastOkAt: number | null;
  ok(): void;
  failed(err: unknown): void;
  /** What the payments HTTP client tells of each call (HttpClientDeps.onCall): ok() or failed(). */
  heard(outcome: ProviderCallOutcome): void;
  /** Called once each time the provider answers again after an outage (reads failed meanwhile). */
  onRecovered(listener: () => void): void;
  /** Called each time `reachable` flips, either way (the screen's `offline`, MQTT's retained state). */
  onChange(listener: () => void): void;
}

export function createProviderHealth(clock: Clock): ProviderHealth {
  const listeners: (() => void)[] = [];
  const changed: (() => void)[] = [];
  return {
    reachable: true,
    lastError: null,
    lastOkAt: null,
    ok() {
      const recovered = !this.reachable;
      this.reachable = true;
      this.lastError = null;
      this.lastOkAt = clock.now();
      if (recovered) for (const listener of [...listeners, ...changed]) listener();
    },
    heard(outcome) {
      if (outcome.ok) this.ok();
      else this.failed(outcome.error);
    },
    onChange(listener) {
      changed.push(listener);
    },
    onRecovered(listener) {
      listeners.push(listener);
    },
    failed(err) {
      if (err instanceof ProviderError && !err.transient) return;
      // The card refused a write (full, read-only): the provider is not to blame.
      if (isStorageError(err)) return;
      const lost = this.reachable;
      this.reachable = false;
      this.lastError = errorMessage(err);
      if (lost) for (const listener of changed) listener();
    },
  };
}

export interface OrderServiceDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
  /** The process's one order repository. */
  orderRepository: OrderRepository;
  provider: PaymentProvider;
  /** Where a reading this service made (the create and cancel answers, a read) is recorded: the ledger. */
  ledger: ObservePort;
  health: ProviderHealth;
  deviceId: string;
  dbId: string;
  /** Why the device takes no orders right now (inhibit, fire alarm, operator), or null. */
  outOfService: () => string | null;
  crashPoint?: (name: string) => void;
  onChange?: () => void;
  /** An order closed without payment (MDB denies the machine's session). */
  onClosedUnpaid?: (order: OrderRow, reason: string) => void;
  /** The catalog orders are priced from: the live one (src/catalog/), or the settings' (catalog/ staticCatalog). */
  catalog: CatalogPort;
  /** The customer's payment window on this device's own clocks (shared with the ledger); absent: its own. */
  windows?: PaymentWindows;
  /** The card beneath the database: no new order while it refuses writes (VG_ERR_STORAGE). */
  storage?: { report(err: unknown): StorageFault | null; fault(): StorageFault | null; describe(): string };
  /** MDB: the session style in force (the actuator's; session: auto learns it from the machine). */
  sessionStyle?: () => 'always-idle' | 'authorization-first' | null;
}

/** What the order service asks the catalog (src/catalog/): price and name of a slot, or why not. */
export interface CatalogPort {
  /** The item to price an order from; throws UNKNOWN_SLOT (400), SOLD_OUT / SLOT_JAMMED (409). */
  forSale(slot: string | undefined): { slot: string; name: string; price: number };
  /** MDB: throws SOLD_OUT / SLOT_JAMMED for a listed item that cannot be sold now. */
  assertSellable(item: string): void;
  item(slot: string): { name: string } | undefined;
}

/**
 * Orders as the rest of the device uses them (kiosk, buttons, MDB, MQTT, the CLI, the money path):
 * create with the key on disk before the call, cancel and expire by the provider's word.
 */
export interface OrderService {
  /**
   * A new order and its invoice. The order row, its key and the request body are on disk before
   * the create call (invariant 4). Throws a VendgateError: OUT_OF_SERVICE, STORAGE (the card refuses
   * writes: full, read-only, failing), PROVIDER_UNAVAILABLE,
   * UNKNOWN_SLOT, SOLD_OUT / SLOT_JAMMED, DEVICE_BUSY (another order is being created or
   * delivered), PROVIDER_REJECTED, IDEMPOTENCY_CONFLICT, INVOICE_MISMATCH.
   */
  create(input: OrderInput): Promise<OrderRow>;
  get(orderId: number): OrderRow | undefined;
  /**
   * Cancels a waiting order at the provider; its answer decides (a payment that raced the cancel is
   * vended). An order already canceled is returned as it is. Throws ORDER_NOT_FOUND, ORDER_STATE
   * (no longer waiting), PROVIDER_UNAVAILABLE (the order stays open and watched).
   */
  cancel(orderId: number, by?: string): Promise<OrderRow>;
  /**
   * Expires orders whose invoice ran out, by the provider's word: one last read (a payment made
   * in the last second is vended), then the cancel, whose answer decides. When the provider
   * cannot be reached the order stays waiting and followed — no local timer closes an invoice
   * whose last read failed.
   */
  expireDue(): Promise<void>;
  /**
   * Start-up, before any new order is taken: orders a crash left in `creating` get their invoice
   * with the same key and body (invariant 4), and every waiting order is read (a payment made
   * while the service was down is vended, not replaced).
   */
  recover(): Promise<void>;
  /** Orders newest first (the CLI, the export). */
  list(filter?: OrderListFilter): OrderRow[];
  /** The order's transitions, oldest first. */
  history(id: number): OrderHistoryEntry[];
  /** The newest order, or undefined (the screen follows it). Read-only. */
  latest(): OrderRow | undefined;
  /** Orders in these states, oldest first. Read-only. */
  inStates(states: readonly OrderState[]): OrderRow[];
  /** How many orders are in each state (telemetry). Read-only. */
  countByState(): { state: string; n: number }[];
  /** A history line that moves nothing (the audit of an operator's command); false: no such order. Caller owns the tx. */
  note(id: number, reason: string): boolean;
  /**
   * When the customer's window ends on this device's clock (orders/window.ts), for the screen's
   * countdown: a clock hours off from the provider's does not show a QR as expired before it was shown.
   */
  windowEndsAt(order: OrderRow): number | null;
}

export function createOrderService(
  deps: OrderServiceDeps,
  settings: Pick<Readonly<Settings>, 'device' | 'provider'> & Partial<Pick<Readonly<Settings>, 'actuator' | 'pricing'>>,
): OrderService {
  const { db, clock, outbox, provider, ledger, health } = deps;
  const log = deps.logger.child({ module: 'orders' });
  const repo = deps.orderRepository;
  const transitions = createTransitions(repo);
  const crash = deps.crashPoint ?? (() => {});
  const changed = () => deps.onChange?.();
  /** A create is cancelling the waiting order it replaces (an await before its insert). */
  let replacing = false;
  /**
   * When each waiting order runs out: its window on this device's own clocks (orders/window.ts),
   * kept on the monotonic clock from the first time this process sees it. A wall clock that jumps
   * months either way afterwards neither expires a fresh order nor keeps a stale one open, and a
   * provider's clock (or Date header) hours off changes nothing; the provider's word still decides
   * (the read and the cancel of expireDue).
   */
  const windows = deps.windows ?? createPaymentWindows({ db, clock }, { defaultTtlSec: settings.provider.invoiceTtlSec });
  /** This device's clock minus the provider's, proven by the provider's own creation times (never its Date header). */
  const provenOffset = createProvenOffset(clock);

  /** The catalog's price for a machine's vend request; a mismatch raises mdb_price_mismatch/<item> and is denied. */
  function priceMachineRequest(item: string, machinePrice: number): { slot: string; itemName: string; amount: number } {
    const policy = { prices: settings.actuator?.serial.mdb.prices ?? 'catalog', pricing: settings.pricing } as const;
    const alarm = `mdb_price_mismatch/${item}`;
    try {
      const priced = priceMdbRequest(deps.catalog, item, machinePrice, policy);
      if (priced.mismatch) log.warn({ item, ...priced.mismatch }, "machine's own price charged (actuator.serial.mdb.prices: machine)");
      else inTransaction(db, () => outbox.clearAlarm(alarm));
      return priced;
    } catch (err) {
      if (err instanceof VendgateError && err.code === ErrorCodes.PRICE_MISMATCH) {
        log.warn({ item, ...err.details }, 'machine vend request at another price than the catalog: denied');
        inTransaction(db, () => outbox.raiseAlarm(alarm, 'warning', err.message, err.details));
      }
      throw err;
    }
  }

  /** Money the machine can be told about, or no order: see selectionOn. */
  function assertMachineCanHear(input: OrderInput): void {
    if (!settings.actuator || settings.actuator.kind !== 'serial' || settings.actuator.serial.profile !== 'mdb') return;
    const machineChooses = selectionOn(settings.actuator, deps.sessionStyle?.()) === 'machine';
    if (machineChooses && input.source !== 'mdb') {
      throw new VendgateError(
        ErrorCodes.CHOOSE_ON_MACHINE,
        'on this machine the customer chooses on the machine, then pays the QR shown here',
      );
    }
    if (!machineChooses && input.source === 'mdb') {
      throw new VendgateError(
        ErrorCodes.CHOOSE_ON_MACHINE,
        'authorization first: the customer pays on the kiosk before choosing on the machine',
      );
    }
  }

  function describeItem(input: OrderInput): { slot: string | null; itemName: string; amount: number } {
    if (input.source === 'mdb') {
      if (!input.item || !Number.isInteger(input.amount) || (input.amount ?? 0) <= 0) {
        throw new VendgateError(ErrorCodes.BAD_REQUEST, 'a machine vend request needs an item and a positive amount');
      }
      return priceMachineRequest(input.item, input.amount!);
    }
    if (settings.device.mode === 'turnstile') {
      return { slot: null, itemName: 'pass', amount: settings.device.fare! };
    }
    const item = deps.catalog.forSale(input.slot);
    return { slot: item.slot, itemName: item.name, amount: item.price };
  }

  /** The fields of a new attempt's request, from the settings of the moment its key is made. */
  function requestFields(itemName: string, expiresInSec?: number): CreateRequestFields {
    const ttl = Math.min(settings.provider.invoiceTtlSec, expiresInSec ?? Infinity);
    return { description: itemName, expiresInSec: ttl, captureMode: settings.provider.captureMode };
  }

  /** The attempt's request exactly as it was fixed with its key (invariant 4: byte-identical retries). */
  function requestFor(order: OrderRow) {
    const fixed: CreateRequestFields = order.create_request
      ? (JSON.parse(order.create_request) as CreateRequestFields)
      : requestFields(order.item_name);
    return {
      idempotencyKey: order.idempotency_key,
      reference: order.reference,
      amount: order.amount,
      currency: order.currency,
      description: fixed.description,
      expiresInSec: fixed.expiresInSec,
      captureMode: fixed.captureMode,
    };
  }

  /**
   * Why a create answer is not an invoice this attempt made (null when it is): another reference,
   * amount, currency or description; created before the order; already expired before it. Such an
   * answer is a key used before under other terms: it never vends. An answer that passes and is
   * already paid is still ours (the `our-own-key-is-ours` row of decide.ts).
   */
  function notMadeByThisAttempt(order: OrderRow, invoice: Invoice): string | null {
    const request = requestFor(order);
    if (invoice.reference !== order.reference) return `reference ${invoice.reference} ≠ ${order.reference}`;
    if (invoice.amount !== order.amount) return `amount ${invoice.amount} ≠ ${order.amount}`;
    if (invoice.currency !== order.currency) return `currency ${invoice.currency} ≠ ${order.currency}`;
    if (invoice.livemode !== (order.livemode === 1)) return `livemode ${invoice.livemode} ≠ ${order.livemode === 1}`;
    if (invoice.description !== undefined && invoice.description !== request.description)
      return `description ${JSON.stringify(invoice.description)} ≠ ${JSON.stringify(request.description)}`;
    // An invoice the provider made for this very call (Gerege 201, QutPay without idempotentReplay)
    // was by the provider's own word not made before: no clock is asked.
    if (invoice.replayed !== true) return null;
    // A replayed key: its invoice's times are the provider's. They are read on this device's clock
    // through an offset only the provider's own creation times proved (proven-offset.ts), never
    // through a Date header; unproven (QutPay, or no fresh Gerege answer yet), this device's clock as it is.
    const offset = provenOffset.ms() ?? 0;
    if (invoice.createdAt !== undefined && invoice.createdAt + offset < order.created_at - CLOCK_SLACK_MS)
      return `created ${new Date(invoice.createdAt).toISOString()}, before the order${offset ? ` (clock offset ${Math.round(offset / 1000)} s allowed for)` : ''}`;
    if (invoice.expiresAt + offset < order.created_at - CLOCK_SLACK_MS)
      return `expired ${new Date(invoice.expiresAt).toISOString()}, before the order${offset ? ` (clock offset ${Math.round(offset / 1000)} s allowed for)` : ''}`;
    return null;
  }

  /** When the attempt's key was fixed (its first create call followed): the order's insert, or its new attempt. */
  function attemptFixedAt(order: OrderRow): number {
    if (order.attempt === 1) return order.created_at;
    const fixed = repo
      .history(order.id)
      .filter((entry) => entry.to === 'creating')
      .at(-1);
    return fixed ? Date.parse(fixed.at) : order.updated_at;
  }

  /** An invoice under this attempt's own key, already paid when its create answer came: say so. */
  function raiseOwnKeyAlarm(order: OrderRow, invoice: Invoice): void {
    const detail = {
      orderId: order.id,
      reference: order.reference,
      invoiceId: invoice.id,
      attempt: order.attempt,
      status: invoice.providerStatus,
    };
    log.error(detail, "the create answer under this order's own key is already paid: its record was lost after the QR was shown; followed");
    outbox.raiseAlarm(
      `invoice_recovered/${order.id}`,
      'critical',
      `an invoice under this order's own key was already ${invoice.providerStatus} when its create answer came (its record was lost after the QR was shown, e.g. a power cut): it is followed like any other — vended inside the window, refunded after — check the order`,
      detail,
    );
  }

  function fail(order: OrderRow, code: string, message: string): void {
    inTransaction(db, () => {
      if (transitions.creationFailed(order, code, message)) {
        outbox.event('order.failed', { orderId: order.id, reference: order.reference, code, message });
      }
    });
    changed();
  }

  /** Calls the provider for an order in `creating` (new, or left by a crash) and records the result. */
  async function obtainInvoice(first: OrderRow): Promise<OrderRow> {
    let order = first;
    for (;;) {
      let invoice: Invoice;
      const sentAt = clock.now();
      try {
        invoice = await provider.createInvoice(requestFor(order));
        provenOffset.heard(invoice, sentAt);
      } catch (err) {
        if (err instanceof ProviderError && err.kind === 'conflict') {
          inTransaction(db, () =>
            outbox.raiseAlarm(
              'idempotency_conflict',
              'critical',
              'the provider reports a reused idempotency key with a different body: a programming or configuration error',
              { orderId: order.id, reference: order.reference },
            ),
          );
          fail(order, ErrorCodes.IDEMPOTENCY_CONFLICT, err.message);
          throw new VendgateError(
            ErrorCodes.IDEMPOTENCY_CONFLICT,
            'the payment provider refused the order; the operator has been alerted',
            { cause: err },
          );
        }
        const transient = !(err instanceof ProviderError) || err.transient;
        const code = transient ? ErrorCodes.PROVIDER_UNAVAILABLE : ErrorCodes.PROVIDER_REJECTED;
        fail(order, code, errorMessage(err));
        log.warn({ err, orderId: order.id }, 'invoice not created');
        throw new VendgateError(
          code,
          transient
            ? 'the payment service is not reachable; please try again'
            : `the payment provider refused the order: ${errorMessage(err)}`,
          { cause: err },
        );
      }
      crash('after_invoice_create');
      const answer = decideCreateAnswer({ identityMismatch: notMadeByThisAttempt(order, invoice), status: invoice.status });
      if (answer.kind !== 'foreign')
        return attach(order, invoice, invoice.replayed === true ? attemptFixedAt(order) : sentAt, answer.kind === 'attach_seen_already');
      const foreign = answer.reason;
      // A key used before. Never vended; the alarm names it; the next attempt gets a new key.
      log.error(
        { orderId: order.id, reference: order.reference, invoiceId: invoice.id, attempt: order.attempt, detail: foreign },
        'the create answer is an invoice this attempt did not make',
      );
      const give = order.attempt >= MAX_ATTEMPTS;
      const current = order;
      order = durably(
        db,
        () => {
          outbox.raiseAlarm(
            `invoice_reused/${current.id}`,
            'critical',
            'the provider answered an order with an invoice it did not make (a key used before: restored or cloned database?); it was not vended',
            {
              orderId: current.id,
              reference: current.reference,
              invoiceId: invoice.id,
              attempt: current.attempt,
              detail: foreign,
            },
          );
          return give ? current : repo.newAttempt(current.id, requestFields(current.item_name));
        },
        'order_attempt',
      );
      if (give) {
        fail(order, ErrorCodes.INVOICE_MISMATCH, `provider returned an invoice this order did not make: ${foreign}`);
        throw new VendgateError(
          ErrorCodes.INVOICE_MISMATCH,
          'the payment provider returned an unexpected invoice; the operator has been alerted',
        );
      }
    }
  }

  /**
   * Records the create answer at FULL before the caller (kiosk, API, MQTT) can show its pay URL:
   * a QR on the screen is an invoice the database will still know after a power cut.
   */
  function attach(order: OrderRow, invoice: Invoice, windowOpenedAt: number, seenAlready = false): OrderRow {
    durably(
      db,
      () => {
        repo.attachInvoice(order.id, invoice, windowOpenedAt);
        if (transitions.invoiceAttached(order, invoice.replayed === true)) {
          outbox.event('invoice.created', {
            orderId: order.id,
            reference: order.reference,
            invoiceId: invoice.id,
            amount: order.amount,
            currency: order.currency,
            expiresAt: new Date(invoice.expiresAt).toISOString(),
          });
        }
        if (seenAlready) raiseOwnKeyAlarm(order, invoice);
      },
      'invoice_attach',
    );
    // Its window starts now, on the monotonic clock (a wall clock that jumps later moves nothing).
    const attached = repo.get(order.id);
    if (attached) windows.leftMs(attached);
    // A replayed invoice may already be closed (a long restart): the ledger decides.
    ledger.observe(observationOf(invoice, 'create'));
    changed();
    return repo.get(order.id)!;
  }

  /**
   * Closes a waiting order by the provider's current state, never by a local decision alone: the
   * cancel is sent first and its answer decides. `paid` → the ledger vends it (the customer paid
   * while choosing again); `canceled`/`expired` → closed as `to`. Throws when the provider cannot be
   * asked: the order then stays waiting and followed.
   */
  async function closeAtProvider(order: OrderRow, to: 'canceled' | 'expired', reason: string): Promise<OrderRow> {
    const invoice = await provider.cancelInvoice(order.invoice_id!);
    // The answer is a reading like any other: the ledger closes the order as asked when it says
    // canceled or expired (decide.ts, our-cancel-closes-the-order), and vends it when it says paid.
    const result = ledger.observe(observationOf(invoice, to === 'expired' ? 'expiry' : 'cancel'), { kind: 'close', as: to, reason });
    if (result.outcome === 'recorded' && result.from === order.state && result.to === to) deps.onClosedUnpaid?.(order, reason);
    changed();
    return repo.get(order.id)!;
  }

  /** Reads a waiting order's invoice and lets the ledger decide; false when the provider did not answer. */
  async function readWaiting(order: OrderRow, channel: 'recovery' | 'expiry'): Promise<boolean> {
    try {
      const invoice = await provider.getInvoice(order.invoice_id!);
      ledger.observe(observationOf(invoice, channel));
      changed();
      return true;
    } catch (err) {
      log.warn({ err, orderId: order.id, invoiceId: order.invoice_id }, 'could not read a waiting order');
      return false;
    }
  }

  function storageRefusal(): VendgateError {
    const fault = deps.storage?.fault();
    return new VendgateError(ErrorCodes.STORAGE, `no new orders: ${deps.storage?.describe() ?? 'the database cannot be written'}`, {
      details: fault ? { path: fault.path, freeBytes: fault.freeBytes, kind: fault.kind, code: fault.code } : {},
    });
  }

  async function createOrder(input: OrderInput): Promise<OrderRow> {
    if (deps.storage?.fault()) throw storageRefusal();
    const reason = deps.outOfService();
    if (reason) throw new VendgateError(ErrorCodes.OUT_OF_SERVICE, `out of service: ${reason}`);
    if (!health.reachable)
      throw new VendgateError(ErrorCodes.PROVIDER_UNAVAILABLE, 'the payment service is not reachable; please try again shortly');
    // Validated before anything is touched; priced again at the insert (a catalog may change meanwhile).
    assertMachineCanHear(input);
    describeItem(input);
    if (replacing) throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'an order is being created; please wait');
    if (repo.inStates(IN_PROGRESS_STATES).length > 0) {
      throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'the machine is delivering an order; please wait');
    }
    if (repo.inStates(['creating']).length > 0) {
      throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'an order is being created; please wait');
    }
    // One order at a time: a new choice replaces the one waiting for payment — by the provider's
    // word. A waiting order that turns out paid is vended and this one refused.
    // Until the new order is on disk no second create may start: the checks above would both pass.
    replacing = true;
    try {
      for (const open of repo.inStates(['awaiting_payment'])) {
        const after = await closeAtProvider(open, 'canceled', 'replaced by a new order').catch((err: unknown) => {
          if (isStorageError(err)) throw err;
          throw new VendgateError(ErrorCodes.PROVIDER_UNAVAILABLE, 'the payment service is not reachable; please try again shortly', {
            cause: err,
          });
        });
        if (after.state !== 'canceled' && after.state !== 'expired') {
          throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'the previous order was just paid and is being delivered; please wait');
        }
      }
    } finally {
      replacing = false;
    }
    // Priced now, in the same turn as the insert: a catalog applied meanwhile is the one used.
    const item = describeItem(input);
    // Committed at NORMAL: the create call's answer is committed at FULL (`invoice_attach`) before
    // anything of it is shown, and that sync carries this row with it. A cut before then loses an
    // order whose QR nobody saw: its invoice can only be an unpaid orphan (the reconciler's sweep).
    const order = inTransaction(db, () => {
      const row = repo.insert(
        {
          request: requestFields(item.itemName, input.expiresInSec),
          source: input.source,
          slot: item.slot,
          itemName: item.itemName,
          amount: item.amount,
          currency: settings.device.currency,
          livemode: settings.device.livemode,
          provider: provider.name,
          captureMode: settings.provider.captureMode,
        },
        deps.deviceId,
        deps.dbId,
      );
      outbox.event('order.created', {
        orderId: row.id,
        reference: row.reference,
        source: row.source,
        slot: row.slot,
        amount: row.amount,
        currency: row.currency,
      });
      outbox.count('orders_created');
      return row;
    });
    crash('after_order_insert');
    changed();
    log.info({ orderId: order.id, reference: order.reference, slot: order.slot, amount: order.amount }, 'order created');
    return obtainInvoice(order);
  }

  return {
    async create(input: OrderInput): Promise<OrderRow> {
      try {
        return await createOrder(input);
      } catch (err) {
        // A write the card refused (the insert, the close of the order it replaces) is the disk's fault.
        const fault = err instanceof VendgateError ? null : deps.storage?.report(err);
        if (fault) throw storageRefusal();
        throw err;
      }
    },

    get(orderId: number): OrderRow | undefined {
      return repo.get(orderId);
    },

    async cancel(orderId: number, by = 'customer'): Promise<OrderRow> {
      const order = repo.get(orderId);
      if (!order) throw new VendgateError(ErrorCodes.ORDER_NOT_FOUND, `no order ${orderId}`);
      if (order.state === 'canceled') return order;
      if (order.state !== 'awaiting_payment') {
        throw new VendgateError(ErrorCodes.ORDER_STATE, `order ${orderId} is ${order.state} and can no longer be canceled`);
      }
      try {
        return await closeAtProvider(order, 'canceled', `canceled by ${by}`);
      } catch (err) {
        throw new VendgateError(
          ErrorCodes.PROVIDER_UNAVAILABLE,
          'the payment service is not reachable, so the order cannot be canceled yet; it stays open and is still watched',
          { cause: err },
        );
      }
    },

    /**
     * Expires orders whose invoice ran out, by the provider's word: one last read (a payment made
     * in the last second is vended), then the cancel, whose answer decides. When the provider
     * cannot be reached the order stays waiting and followed — no local timer closes an invoice
     * whose last read failed.
     */
    async expireDue(): Promise<void> {
      const waiting = repo.inStates(['awaiting_payment']);
      for (const order of waiting) {
        const left = windows.leftMs(order);
        if (left === null || left > 0) continue;
        if (!(await readWaiting(order, 'expiry'))) continue;
        const current = repo.get(order.id)!;
        if (current.state !== 'awaiting_payment') continue;
        await closeAtProvider(current, 'expired', 'not paid in time').catch((err: unknown) => {
          log.warn({ err, orderId: order.id }, 'expiry: the cancel did not reach the provider; the order stays watched');
        });
      }
    },

    /**
     * Start-up, before any new order is taken: orders a crash left in `creating` get their invoice
     * with the same key and body (invariant 4), and every waiting order is read (a payment made
     * while the service was down is vended, not replaced).
     */
    async recover(): Promise<void> {
      for (const order of repo.inStates(['creating'])) {
        log.warn({ orderId: order.id, reference: order.reference }, 'resuming an order interrupted while its invoice was created');
        try {
          const resumed = await obtainInvoice(order);
          const ttlOver = (windows.leftMs(resumed) ?? 1) <= 0;
          // The customer has long walked away from a QR that was never shown: close it.
          if (resumed.state === 'awaiting_payment' && (ttlOver || order.created_at + requestFor(order).expiresInSec * 1000 < clock.now())) {
            await closeAtProvider(resumed, 'expired', 'interrupted by a restart');
          }
        } catch (err) {
          log.error({ err, orderId: order.id }, 'could not resume the order');
        }
      }
      for (const order of repo.inStates(['awaiting_payment'])) {
        // Its window is fixed on the monotonic clock now, before anything can move the wall clock.
        windows.leftMs(order);
        await readWaiting(order, 'recovery');
      }
    },

    list: repo.list,
    history: repo.history,
    latest: repo.latest,
    inStates: repo.inStates,
    countByState: repo.countByState,
    note: repo.note,
    windowEndsAt(order) {
      const left = windows.leftMs(order);
      return left === null ? null : clock.now() + left;
    },
  };
}
