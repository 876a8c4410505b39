/**
 * The money path, composed once: ledger → (orders, vend jobs, refunds) and the reconciliation loop,
 * with the order of recovery and of stopping. `app.ts` and the tests build it through here, so a
 * change of wiring is made in one place. Channels (poller, webhooks) observe through `ledger`.
 */
import { databaseId, isStorageError, type StorageFault } from '../store/index.js';
import type { Settings } from '../settings/index.js';
import type { Actuator } from '../hardware/index.js';
import { staticCatalog } from '../catalog/index.js';
import { createLedger, createOrphanSweep, createReconciler, type Ledger, type OrphanCandidate, type Reconciler } from '../ledger/index.js';
import {
  createOrderService,
  createPaymentWindows,
  type CatalogPort,
  type OrderRow,
  type OrderService,
  type OrderServiceDeps,
} from '../orders/index.js';
import { createRefundWorker, createVendRunner, type ReceiptPort, type RefundWorker, type VendRunner } from '../vend/index.js';

/**
 * What the money path is built on. The first fields are the order service's own (the money path
 * passes them on to it and to the parts beside it: ledger, vend runner, refund worker).
 */
export interface MoneyPathDeps extends Pick<
  OrderServiceDeps,
  'db' | 'clock' | 'logger' | 'outbox' | 'orderRepository' | 'provider' | 'health' | 'outOfService'
> {
  actuator: Actuator;
  /** The live catalog (prices, stock, jams: src/catalog/). Absent: settings.device.catalog, always for sale. */
  catalog?: CatalogPort & { slots?: { delivered(slot: string): void; failed(slot: string, reason: string): void } };
  /** What the rest of the device hears from the money path. */
  events?: MoneyPathEvents;
  /**
   * Fiscal receipts (src/fiscal/): a delivered vend and a refund of a receipted sale write their
   * receipt row in the transaction that settles them. Absent (`fiscal.register: none`): no receipts.
   */
  receipts?: ReceiptPort;
  /** Test hooks: crash points and workers driven step by step. */
  hooks?: MoneyPathHooks;
  /**
   * The card beneath the database (src/store/storage-health.ts): a write it refused is reported
   * here, and while it holds a fault new orders are refused with VG_ERR_STORAGE.
   */
  storage?: { report(err: unknown): StorageFault | null; fault(): StorageFault | null; describe(): string };
  /** Invoices seen under a reference prefix since a time (the webhook inbox): the orphan sweep's candidates. */
  orphanCandidates?: (prefix: string, sinceMs: number) => OrphanCandidate[];
}

/** What the money path tells the rest of the device; each one is optional. */
export interface MoneyPathEvents {
  /** Something changed that the screen and MQTT should show: called at the next turn of the event loop, once per turn. */
  changed?(): void;
  /** Once per settled vend, with the order as claimed and the actuator's result (metrics). */
  vendSettled?(order: OrderRow, result: string): void;
  /** An order closed without money (an MDB session is denied). */
  closedUnpaid?(order: OrderRow, reason: string): void;
  /** Every housekeeping tick (the app notices a catalog changed by another process). */
  tick?(): void;
}

export interface MoneyPathHooks {
  /** Named points at which the process kills itself (crash tests). */
  crashPoint?: (name: string) => void;
  /**
   * Start queued vends and refunds the moment the ledger queues them (the service: the default).
   * False in tests that drive each worker step by step.
   */
  runWorkersOnObserve?: boolean;
}

export type MoneyPathSettings = Pick<Readonly<Settings>, 'device' | 'provider' | 'poll' | 'actuator' | 'policy'> &
  /** `storage.retentionDays` bounds the orphan sweep (an older invoice may be a pruned order's); absent: the schema's 90. */
  Partial<Pick<Readonly<Settings>, 'storage' | 'pricing'>>;

export interface MoneyPath {
  /** The ledger every channel observes through. */
  ledger: Ledger;
  orders: OrderService;
  vend: VendRunner;
  refunds: RefundWorker;
  reconciler: Reconciler;
  /**
   * Start-up, before anything new is accepted: interrupted vends, unknown refunds, half-made and
   * waiting orders. `restored`: the database came back from a backup, so any paid order it shows
   * not yet vended may have been delivered after the backup: parked for a person, never fired.
   */
  recover(options?: { restored?: boolean }): Promise<{ uncertain: number[]; settled: number[]; refundsUnknown: number }>;
  /** The housekeeping timer (expiry, queued work, captures) and the reconciliation loop. */
  start(): void;
  /** Stops the timers and waits for the vend and the refund in flight, so none is cut off by the database closing. */
  stop(): Promise<void>;
}

export function createMoneyPath(deps: MoneyPathDeps, settings: MoneyPathSettings): MoneyPath {
  const { db, clock, logger, outbox, orderRepository, provider, actuator, health } = deps;
  const { crashPoint, runWorkersOnObserve = true } = deps.hooks ?? {};
  const events = deps.events ?? {};
  const log = logger.child({ module: 'money' });
  // The screen and MQTT hear of a change at the next turn of the event loop, once however many steps
  // changed something in this one (observed, claimed): the vend being fired and the webhook being
  // answered never wait while the screen's state is computed and sent (nothing on the paid →
  // actuation path waits behind work that can wait).
  let changePending: NodeJS.Immediate | null = null;
  const changed = () => {
    if (!events.changed || changePending) return;
    changePending = setImmediate(() => {
      changePending = null;
      try {
        events.changed?.();
      } catch (err) {
        log.warn({ err }, 'the screen or MQTT could not follow a change');
      }
    });
  };
  // One set of payment windows for the ledger ("too late") and the order service (expiry).
  const windows = createPaymentWindows({ db, clock }, { defaultTtlSec: settings.provider.invoiceTtlSec });
  const baseLedger = createLedger(
    {
      db,
      clock,
      logger,
      outbox,
      orderRepository,
      windows,
      ...(deps.receipts ? { receipts: deps.receipts } : {}),
    },
    { lateVendMs: settings.poll.lateGraceSec * 1000 },
  );
  let housekeeping: NodeJS.Timeout | null = null;
  /**
   * A worker pass that failed is not a crash: the next tick tries again from what the database
   * holds (a claim is committed before anything is fired or sent, so a failed pass moved nothing
   * twice). A pass the card refused also reports the fault (new orders stop, the operator is told);
   * anything else (a lock another process held past the busy timeout) is logged. Rejecting here
   * would end the process and, under systemd, restart it in a loop for as long as the cause lasts.
   */
  const background = (pass: Promise<void>, what: string) =>
    pass.catch((err: unknown) => {
      if (isStorageError(err)) {
        deps.storage?.report(err);
        log.error({ err }, `${what}: the card refused a write; retried at the next tick`);
        return;
      }
      log.error({ err }, `${what} pass failed; retried at the next tick`);
    });
  /** During recovery nothing is fired from an observation; what recovery queued is looked at first. */
  let recovering = false;

  // Every channel observes through this: a queued vend or refund starts at once, not at the next tick.
  const ledger: Ledger = {
    observe(observation, question) {
      const result = baseLedger.observe(observation, question);
      if (result.outcome === 'recorded') {
        if (result.vendQueued) crashPoint?.('after_ledger_commit');
        if (runWorkersOnObserve && !recovering) {
          if (result.vendQueued) void background(vend.run(), 'vend');
          if (result.refundQueued) void background(refunds.run(), 'refund');
        }
        if (result.refundEvidence) refunds.expedite(observation.invoiceId);
        changed();
      }
      return result;
    },
  };
  const refunds = createRefundWorker(
    { db, clock, logger, outbox, orderRepository, provider, ledger, ...(deps.receipts ? { receipts: deps.receipts } : {}) },
    {
      checkIntervalMs: Math.max(settings.poll.intervalMs, 1_000),
      unknownAlarmMs: settings.provider.refundUnknownAlarmSec * 1000,
    },
  );
  const vend = createVendRunner(
    {
      db,
      clock,
      logger,
      outbox,
      orderRepository,
      actuator,
      provider,
      ledger,
      crashPoint,
      onChange: changed,
      onSettled: events.vendSettled,
      ...(deps.catalog?.slots ? { slots: deps.catalog.slots } : {}),
      ...(deps.storage ? { storage: deps.storage } : {}),
      ...(deps.receipts ? { receipts: deps.receipts } : {}),
    },
    {
      mode: settings.device.mode,
      vendTimeoutMs: settings.actuator.vendTimeoutMs,
      notPassedPolicy: settings.policy.notPassed,
    },
  );
  const orders = createOrderService(
    {
      db,
      clock,
      logger,
      outbox,
      orderRepository,
      provider,
      ledger,
      health,
      deviceId: settings.device.id,
      dbId: databaseId(db),
      outOfService: deps.outOfService,
      sessionStyle: () => deps.actuator.sessionStyle?.() ?? null,
      crashPoint,
      onChange: changed,
      onClosedUnpaid: events.closedUnpaid,
      catalog: deps.catalog ?? staticCatalog(settings.device.catalog),
      ...(deps.storage ? { storage: deps.storage } : {}),
      windows,
    },
    settings,
  );
  const orphans = deps.orphanCandidates
    ? createOrphanSweep({
        db,
        clock,
        logger,
        outbox,
        provider,
        orders: orderRepository,
        candidates: deps.orphanCandidates,
        deviceId: settings.device.id,
        lookbackMs: settings.poll.reconcileDays * 86_400_000,
        retentionMs: (settings.storage?.retentionDays ?? 90) * 86_400_000,
      })
    : undefined;
  const reconciler = createReconciler(
    { db, clock, logger, outbox, provider, ledger, ...(orphans ? { orphans } : {}) },
    {
      everyMs: settings.poll.reconcileEveryMin * 60_000,
      days: settings.poll.reconcileDays,
      readsPerHour: settings.poll.reconcileReadsPerHour,
    },
  );

  return {
    ledger,
    orders,
    vend,
    refunds,
    reconciler,

    async recover(options = {}) {
      recovering = true;
      try {
        await actuator.start();
        const recovered = await vend.recover();
        const refundsUnknown = refunds.recover();
        await orders.recover();
        const parked = options.restored ? vend.parkQueued() : [];
        return { ...recovered, uncertain: [...recovered.uncertain, ...parked], refundsUnknown };
      } finally {
        recovering = false;
      }
    },

    start() {
      if (housekeeping) return;
      reconciler.start();
      void background(vend.run(), 'vend');
      void background(refunds.run(), 'refund');
      housekeeping = setInterval(
        () => {
          // A read the card cannot answer must not end the process (a throw in a timer is uncaught):
          // logged, and the next tick reads again.
          try {
            events.tick?.();
          } catch (err) {
            if (!deps.storage?.report(err)) log.error({ err }, 'housekeeping tick failed; read again at the next tick');
          }
          void orders.expireDue().catch((err: unknown) => {
            if (deps.storage?.report(err)) return;
            log.error({ err }, 'expiry pass failed');
          });
          void background(vend.run(), 'vend');
          void background(refunds.run(), 'refund');
          void background(vend.capturePending(), 'capture');
        },
        Math.min(1_000, settings.poll.intervalMs),
      );
      housekeeping.unref();
    },

    async stop() {
      if (housekeeping) clearInterval(housekeeping);
      housekeeping = null;
      await reconciler.stop();
      await vend.stop();
      await refunds.stop();
    },
  };
}
