import type { Db } from '../store/index.js';
import { durably, inTransaction, isStorageError, restoredBoundary } from '../store/index.js';
import { sleep, type Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { errorMessage, ErrorCodes, VendgateError } from '../util/errors.js';
import type { Outbox } from '../outbox/index.js';
import type { Actuator, VendOutcome, VendRequest } from '../hardware/index.js';
import { observationOf, ProviderError, type PaymentProvider } from '../payments/types.js';
import {
  captureOutcome,
  createTransitions,
  mayClaimVend,
  moneyBackBeforeInterruptedVend,
  settleVendOutcome,
  type CaptureOutcome,
  type ObservePort,
  type OrderRepository,
  type OrderRow,
} from '../orders/index.js';
import { createVendJobRepository } from './jobs.js';
import { createSettlement, type ReceiptPort } from './settlement.js';

/** claimNext parked the job for a person instead of returning it to fire. */
const PARKED = Symbol('parked');
const RESTORED_DETAIL =
  'restored database: this paid order may have been vended after the backup was taken; check the machine, then run vendgate resolve';

export interface VendRunnerSettings {
  mode: 'vending' | 'turnstile';
  vendTimeoutMs: number;
  notPassedPolicy: 'refund' | 'keep';
  /** Longest wait between two capture attempts (default 10 min). */
  captureMaxBackoffMs?: number;
}

/** A capture that failed this many times raises its (one) alarm. */
const CAPTURE_ALARM_AFTER = 3;

export interface VendRunnerDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
  orderRepository: OrderRepository;
  actuator: Actuator;
  provider: PaymentProvider;
  /** Where a reading the runner makes (recovery of an interrupted vend) is recorded and decided: the ledger. */
  ledger: ObservePort;
  /** Test-only crash points (the process SIGKILLs itself); a no-op in production. */
  crashPoint?: (name: string) => void;
  /** Called after every settled vend or state change, so the screen and MQTT state follow. */
  onChange?: () => void;
  /** Called once per settled vend with the order as claimed (its paid_at) and the actuator's result: metrics. */
  onSettled?: (order: OrderRow, result: string) => void;
  /** Stock and jam counting (src/catalog/), told inside the settle transaction of a vending order. */
  slots?: { delivered(slot: string): void; failed(slot: string, reason: string): void };
  /**
   * Fiscal receipts (src/fiscal/), told inside the settle transaction of a delivered vend: the
   * receipt row is written with the sale, never sent from here (the vend never waits for a register).
   */
  receipts?: ReceiptPort;
  /**
   * Told of a write the card refused (full, read-only, I/O error: src/store/storage-health.ts); it
   * gives the ballast back on a full disk. Absent: the error is only logged.
   */
  storage?: { report(err: unknown): unknown };
}

/** Between two attempts to write a vend's outcome the card refused: doubling from 100 ms to this. */
const SETTLE_RETRY_MAX_MS = 5_000;

/** The vend runner, as money/ composes it and the device's controls use it. */
export interface VendRunner {
  /**
   * Start-up recovery. A job left `firing` crashed between claim and result: it becomes uncertain
   * (never refired). Where the machine can tell (serial status command), the outcome is settled.
   */
  recover(): Promise<{ uncertain: number[]; settled: number[] }>;
  /**
   * A database restored from a backup: a queued vend may have been delivered after the backup was
   * taken (the newer rows are gone), so it is never fired blindly — each becomes uncertain, with
   * the alarm that asks a person to look at the machine. Returns the orders parked.
   */
  parkQueued(detail?: string): number[];
  /** Processes queued jobs one at a time; concurrent calls share one pass. */
  run(): Promise<void>;
  /**
   * Manual capture after a delivered vend, claimed durably first; after a cut the invoice is read,
   * not captured blindly. Failures back off with one alarm.
   */
  capturePending(): Promise<void>;
  /** A person (CLI, MQTT) settles an uncertain vend: vended keeps the money, not vended refunds it. */
  resolve(orderId: number, vended: boolean, by?: string): OrderRow;
  /** An operator gives the money back for a vended (or paid, not yet vended) order. */
  refund(orderId: number, by?: string): OrderRow;
  /** True while an actuation is in progress. */
  busy(): boolean;
  /**
   * One actuation with no order and no money (an operator's test vend). Refused (VG_ERR_DEVICE_BUSY)
   * while a vend is queued, being claimed or firing; a vend queued meanwhile waits for its answer.
   * Writes nothing. Answers `unknown` after vendTimeoutMs; an actuator that throws, throws.
   */
  testFire(request: VendRequest): Promise<VendOutcome>;
  /** Stops claiming new jobs and waits (bounded) for the actuation in progress to settle. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Claim → fire → settle. The claim is committed with synchronous=FULL before the actuator is touched
 * (invariant 6); a crash after it leaves `firing`, which start-up turns into `uncertain` — never a refire.
 */
export function createVendRunner(deps: VendRunnerDeps, settings: VendRunnerSettings): VendRunner {
  const { db, clock, outbox, actuator, provider } = deps;
  const log = deps.logger.child({ module: 'vend' });
  const orders = deps.orderRepository;
  const transitions = createTransitions(orders);
  const jobs = createVendJobRepository(db);
  const captureMaxBackoffMs = settings.captureMaxBackoffMs ?? 600_000;
  const settlement = createSettlement({
    db,
    clock,
    outbox,
    orderRepository: orders,
    ...(deps.receipts ? { receipts: deps.receipts } : {}),
  });
  const { queueRefund, markUncertain } = settlement;
  const crash = deps.crashPoint ?? (() => {});
  let running: Promise<void> | null = null;
  let firing: Promise<void> | null = null;
  /** A test actuation in progress (no order): a vend claimed meanwhile waits for it. */
  let testing: Promise<void> | null = null;
  let stopped = false;

  const requestFor = (order: OrderRow): VendRequest => ({
    orderId: order.id,
    reference: order.reference,
    slot: order.slot,
    amount: order.amount,
    currency: order.currency,
    mode: settings.mode,
  });

  /** Claims one job durably. Returns the order to fire, or null when there is nothing (more) to do. */
  function claimNext(): OrderRow | typeof PARKED | null {
    // Nothing queued (the usual idle tick): no transaction, no write, no sync.
    if (!jobs.nextQueued()) return null;
    return durably(
      db,
      () => {
        let job = jobs.nextQueued();
        let order = job && orders.get(job.order_id)!;
        while (job && order && !mayClaimVend(order.state)) {
          // The order moved on (an operator refunded it before the vend): the job is void.
          jobs.finish(job.order_id, 'queued', 'failed', 'skipped', `order was ${order.state}`, clock.now());
          job = jobs.nextQueued();
          order = job && orders.get(job.order_id)!;
        }
        if (!job || !order) return null;
        if (!jobs.claim(job.order_id, clock.now())) return null;
        // An order a restored database already held may have been vended after the backup was taken
        // (those rows are gone): never fired, a person looks at the machine.
        const boundary = restoredBoundary(db, 'orders');
        if (boundary !== null && order.id <= boundary) {
          transitions.vendClaimedForAPerson(order);
          markUncertain({ ...order, state: 'vending' }, RESTORED_DETAIL);
          return PARKED;
        }
        transitions.vendClaimed(order);
        outbox.event('vend.started', { orderId: order.id, reference: order.reference, slot: order.slot });
        return orders.get(order.id)!;
      },
      'vend_claim',
    );
  }

  /**
   * The actuator answers for itself: `failed` only when it knows nothing was delivered. A driver that
   * throws or outlives its own worst case (vendTimeoutMs) may have touched the machine, so the
   * outcome is unknown: the order is parked for a person, never refunded or refired blindly.
   */
  async function fire(order: OrderRow): Promise<VendOutcome> {
    try {
      return await fireWithin(requestFor(order));
    } catch (err) {
      return { result: 'unknown', detail: `actuator error: ${errorMessage(err)}` };
    }
  }

  /** The actuator's answer, or `unknown` once vendTimeoutMs has passed without one. A throw passes through. */
  async function fireWithin(request: VendRequest): Promise<VendOutcome> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<VendOutcome>((resolve) => {
      timer = setTimeout(
        () => resolve({ result: 'unknown', detail: `no answer from the ${actuator.kind} actuator within ${settings.vendTimeoutMs} ms` }),
        settings.vendTimeoutMs,
      );
    });
    try {
      return await Promise.race([actuator.fire(request), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  function settle(order: OrderRow, outcome: { result: string; reason?: string; detail?: string; slotFault?: boolean }): void {
    const now = clock.now();
    const detail = 'reason' in outcome && outcome.reason ? outcome.reason : (outcome.detail ?? null);
    const slotted = settings.mode === 'vending' && order.slot !== null;
    // Power-loss durable: a vend delivered just before a power cut comes back `vended`, not parked
    // for a person (one sync per vend; measured in scripts/bench/fsync.mjs).
    durably(
      db,
      () => {
        const settlement = settleVendOutcome(outcome.result, settings.notPassedPolicy);
        if (settlement === 'delivered') {
          jobs.finish(order.id, 'firing', 'done', outcome.result, detail, now);
          transitions.vendDelivered(order, outcome.result);
          if (order.capture_mode === 'manual') jobs.setCapture(order.id, 'pending');
          outbox.event('vend.succeeded', { orderId: order.id, reference: order.reference, slot: order.slot, outcome: outcome.result });
          outbox.count('vends_succeeded');
          if (slotted) deps.slots?.delivered(order.slot!);
          deps.receipts?.sold(order, now);
        } else if (settlement === 'failed') {
          jobs.finish(order.id, 'firing', 'failed', outcome.result, detail, now);
          transitions.vendFailed(order, detail ?? outcome.result);
          outbox.event('vend.failed', { orderId: order.id, reference: order.reference, slot: order.slot, outcome: outcome.result, detail });
          outbox.count('vends_failed');
          queueRefund(order, `vend ${outcome.result}: ${detail ?? ''}`.trim());
          // Only the machine's own failure at this slot counts toward a jam, not a line that was down.
          if (slotted && outcome.slotFault) deps.slots?.failed(order.slot!, detail ?? 'vend failed');
        } else {
          // The machine may or may not have delivered: a person decides (invariant 3).
          markUncertain(order, detail ?? 'the actuator could not say whether it delivered');
        }
      },
      'vend_settle',
    );
  }

  /**
   * A vend that fired is settled whatever the card does: the outcome stays in memory and its write
   * is retried (the ballast was given back on a full disk, so the next attempt usually finds room)
   * until it is on disk. Only a stop gives up, after one last attempt; the order then comes back
   * `vend_uncertain` at the next start, as after a power cut, and the log line says what happened.
   */
  async function settleSurely(order: OrderRow, outcome: VendOutcome): Promise<boolean> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        settle(order, outcome);
        if (attempt > 1)
          log.warn({ orderId: order.id, outcome: outcome.result, attempt }, 'vend outcome written after the card refused it');
        return true;
      } catch (err) {
        if (!isStorageError(err)) throw err;
        deps.storage?.report(err);
        if (stopped && attempt > 1) {
          log.fatal(
            { err, orderId: order.id, reference: order.reference, outcome: outcome.result },
            'stopping with a vend outcome the card would not take: the order comes back vend_uncertain; this line says what happened',
          );
          return false;
        }
        log.error(
          { err, orderId: order.id, reference: order.reference, outcome: outcome.result, attempt },
          'the card refused the vend outcome: kept in memory, retrying',
        );
        await sleep(Math.min(SETTLE_RETRY_MAX_MS, 100 * 2 ** Math.min(attempt - 1, 10)));
      }
    }
  }

  /** claimNext(), with a card that refuses the claim meaning "nothing fired, try later" (the job stays queued). */
  function claimOrWait(): OrderRow | typeof PARKED | null {
    try {
      return claimNext();
    } catch (err) {
      if (!isStorageError(err)) throw err;
      deps.storage?.report(err);
      log.error({ err }, 'the card refused a vend claim: nothing was fired; the vend stays queued');
      return null;
    }
  }

  async function runOnce(): Promise<void> {
    while (!stopped) {
      // One actuation at a time: a paid vend is claimed only once a test actuation has answered.
      while (testing) await testing;
      const order = claimOrWait();
      if (!order) return;
      if (order === PARKED) {
        deps.onChange?.();
        continue;
      }
      deps.onChange?.();
      crash('after_claim_commit');
      log.info({ orderId: order.id, reference: order.reference, slot: order.slot }, 'vend firing');
      const current = fire(order);
      firing = current.then(() => {});
      const outcome = await current;
      crash('after_actuation');
      const written = await settleSurely(order, outcome);
      firing = null;
      if (!written) return;
      deps.onSettled?.(order, outcome.result);
      crash('after_settle');
      log.info({ orderId: order.id, outcome: outcome.result }, 'vend settled');
      deps.onChange?.();
    }
  }

  /**
   * Manual capture after a delivered vend. Each call is claimed durably first (`sending`), so a
   * power cut mid-call is settled by reading the invoice, not by a second blind call. A failure
   * backs off (doubling up to captureMaxBackoffMs) with one alarm; an answer that says capture can
   * never succeed (the authorization was canceled, the provider refuses) gives up with one critical
   * alarm: goods were handed out and the money was not taken.
   */
  async function capturePending(): Promise<void> {
    for (const job of jobs.pendingCaptures(clock.now(), captureMaxBackoffMs)) {
      const order = orders.get(job.order_id)!;
      const claimed = durably(db, () => jobs.claimCapture(order.id, clock.now()), 'capture_claim');
      if (!claimed) continue;
      let outcome: CaptureOutcome;
      try {
        const invoice = await provider.captureInvoice(order.invoice_id!);
        outcome = captureOutcome(invoice.status, invoice.providerStatus);
      } catch (err) {
        outcome = {
          done: false,
          permanent: err instanceof ProviderError && !err.transient && err.kind !== 'auth',
          detail: errorMessage(err),
        };
      }
      settleCapture(order, job.capture_attempts + 1, outcome);
    }
  }

  function settleCapture(order: OrderRow, attempts: number, outcome: CaptureOutcome): void {
    inTransaction(db, () => {
      if (outcome.done) {
        jobs.setCapture(order.id, 'done');
        outbox.clearAlarm(`capture_failed/${order.id}`);
        outbox.event('capture.succeeded', { orderId: order.id, reference: order.reference, invoiceId: order.invoice_id });
        return;
      }
      if (outcome.permanent) {
        jobs.setCapture(order.id, 'failed');
        outbox.raiseAlarm(
          `capture_failed/${order.id}`,
          'critical',
          'a vended order could not be captured and never will be: the goods were handed out without the money; check it with the provider',
          {
            orderId: order.id,
            reference: order.reference,
            invoiceId: order.invoice_id,
            detail: outcome.detail,
          },
        );
        outbox.event('capture.failed', {
          orderId: order.id,
          reference: order.reference,
          invoiceId: order.invoice_id,
          detail: outcome.detail,
        });
        return;
      }
      const wait = Math.min(captureMaxBackoffMs, 1_000 * 2 ** Math.min(attempts, 20));
      jobs.retryCapture(order.id, clock.now() + wait);
      if (attempts === CAPTURE_ALARM_AFTER) {
        outbox.raiseAlarm(
          `capture_failed/${order.id}`,
          'warning',
          'capturing a vended order keeps failing; still retrying, less and less often',
          {
            orderId: order.id,
            reference: order.reference,
            invoiceId: order.invoice_id,
            attempts,
            detail: outcome.detail,
          },
        );
      }
    });
    if (!outcome.done)
      log.warn(
        { orderId: order.id, attempts, permanent: outcome.permanent, detail: outcome.detail },
        outcome.permanent ? 'capture given up' : 'capture failed; will retry later',
      );
  }

  /** A power cut or crash during a capture call: the invoice says whether it happened. */
  async function recoverCaptures(): Promise<void> {
    for (const job of jobs.captures('sending')) {
      const order = orders.get(job.order_id)!;
      try {
        const invoice = await provider.getInvoice(order.invoice_id!);
        const outcome = captureOutcome(invoice.status, invoice.providerStatus);
        if (outcome.done || outcome.permanent) settleCapture(order, job.capture_attempts, outcome);
        else inTransaction(db, () => jobs.retryCapture(order.id, 0));
      } catch (err) {
        // Unreadable now: left `sending`; the next start-up (or the reconciliation loop) reads it again.
        log.warn({ err, orderId: order.id }, 'capture interrupted and the invoice is not readable yet');
      }
    }
  }

  /**
   * Before a vend interrupted by a restart is parked for a person, its invoice is read and observed:
   * if the money already went back (refunded, or the authorization voided), the ledger settles the
   * order as refunded (decide.ts, interrupted-vend-money-already-back). Returns why, or null when
   * the vend is to be parked.
   */
  async function refundedAtProvider(order: OrderRow): Promise<string | null> {
    let why: string | null = null;
    try {
      const invoice = await provider.getInvoice(order.invoice_id!);
      deps.ledger.observe(observationOf(invoice, 'recovery'), { kind: 'interrupted_vend' });
      why = moneyBackBeforeInterruptedVend(order.capture_mode, invoice);
    } catch (err) {
      log.warn({ err, orderId: order.id }, 'recovery: the invoice is not readable; the vend is parked for a person');
    }
    // The order's state says what was decided (also after a cut between that decision and the job's end).
    if (orders.get(order.id)!.state !== 'refunded') return null;
    return why ?? 'the invoice is already refunded at the provider';
  }

  return {
    /**
     * Start-up recovery. A job left `firing` crashed between claim and result: it becomes uncertain
     * (never refired). Where the machine can tell (serial status command), the outcome is settled.
     */
    async recover(): Promise<{ uncertain: number[]; settled: number[] }> {
      const uncertain: number[] = [];
      const settledIds: number[] = [];
      for (const job of jobs.inState('firing')) {
        const order = orders.get(job.order_id)!;
        const refunded = await refundedAtProvider(order);
        if (refunded) {
          inTransaction(db, () => {
            jobs.finish(order.id, 'firing', 'failed', 'refunded_at_provider', refunded, clock.now());
            outbox.event('vend.settled_by_provider', { orderId: order.id, reference: order.reference, detail: refunded });
          });
          settledIds.push(order.id);
          log.warn(
            { orderId: order.id, reference: order.reference },
            'vend interrupted by a restart: already refunded at the provider, settled',
          );
          continue;
        }
        inTransaction(db, () => markUncertain(order, 'the service stopped while the vend was in progress'));
        uncertain.push(order.id);
        log.error({ orderId: order.id, reference: order.reference }, 'vend interrupted by a restart: marked uncertain');
      }
      await recoverCaptures();
      if (actuator.queryOutcome) {
        for (const job of jobs.inState('uncertain')) {
          const order = orders.get(job.order_id)!;
          const answer = await actuator.queryOutcome(requestFor(order)).catch(() => 'unknown' as const);
          if (answer === 'unknown') continue;
          this.resolve(order.id, answer === 'vended', `machine reported ${answer}`);
          settledIds.push(order.id);
        }
      }
      return { uncertain, settled: settledIds };
    },

    /**
     * A database restored from a backup: a queued vend may have been delivered after the backup was
     * taken (the newer rows are gone), so it is never fired blindly — each becomes uncertain, with
     * the alarm that asks a person to look at the machine.
     */
    parkQueued(detail = RESTORED_DETAIL): number[] {
      const parked: number[] = [];
      for (const job of jobs.inState('queued')) {
        durably(
          db,
          () => {
            const order = orders.get(job.order_id)!;
            if (!mayClaimVend(order.state)) return;
            if (!jobs.claim(order.id, clock.now())) return;
            transitions.vendClaimedForAPerson(order);
            markUncertain(orders.get(order.id)!, detail);
            parked.push(order.id);
          },
          'vend_claim',
        );
      }
      if (parked.length) log.error({ orders: parked }, 'restored database: paid orders parked for a person instead of vended');
      return parked;
    },

    /** Processes queued jobs one at a time; concurrent calls share one pass. */
    run(): Promise<void> {
      if (stopped) return Promise.resolve();
      running ??= runOnce().finally(() => {
        running = null;
      });
      return running;
    },

    capturePending,

    /** A person (CLI, MQTT) settles an uncertain vend: vended keeps the money, not vended refunds it. */
    resolve(orderId: number, vended: boolean, by = 'operator'): OrderRow {
      const order = settlement.resolve(orderId, vended, by);
      deps.onChange?.();
      return order;
    },

    /** An operator gives the money back for a vended (or paid, not yet vended) order. */
    refund(orderId: number, by = 'operator'): OrderRow {
      const order = settlement.refund(orderId, by);
      deps.onChange?.();
      return order;
    },

    /** True while an actuation is in progress. */
    busy(): boolean {
      return firing !== null || testing !== null;
    },

    /**
     * One actuation with no order and no money (an operator's test vend). Refused while a vend is
     * queued, being claimed or firing, or another test runs; a vend queued meanwhile is claimed once
     * this one has answered, so the two never touch the machine at once. Writes nothing: there is
     * no order to vend twice. Answers `unknown` after vendTimeoutMs; an actuator that throws, throws.
     */
    async testFire(request: VendRequest): Promise<VendOutcome> {
      if (stopped || running || firing || testing || jobs.nextQueued()) {
        throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'a vend is queued or in progress; try the test vend when the machine is idle');
      }
      const current = fireWithin(request);
      testing = current.then(
        () => {},
        () => {},
      );
      try {
        return await current;
      } finally {
        testing = null;
      }
    },

    /** Stops claiming new jobs and waits (bounded) for the actuation in progress to settle. */
    async stop(graceMs = settings.vendTimeoutMs): Promise<void> {
      stopped = true;
      if (!running && !testing) return;
      const pending = Promise.all([running, testing]);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        pending,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
