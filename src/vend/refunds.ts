import { durably, inTransaction, prepared } from '../store/index.js';
import { errorMessage } from '../util/errors.js';
import { observationOf, ProviderError } from '../payments/types.js';
import type { ReceiptPort } from './settlement.js';
import { createTransitions, refundDoneByReading, refundStillOwed, type OrderServiceDeps } from '../orders/index.js';

export interface RefundRow {
  invoice_id: string;
  order_id: number;
  idempotency_key: string;
  kind: 'refund' | 'void';
  amount: number;
  reason: string;
  state: 'requested' | 'sending' | 'pending' | 'unknown' | 'succeeded' | 'failed';
  provider_refund_id: string | null;
  attempts: number;
  next_check_at: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  alarmed_at: number | null;
}

export interface RefundWorkerSettings {
  /** How often a refund with an unknown or pending outcome is checked by reading the invoice. */
  checkIntervalMs: number;
  /** Unknown for this long → alarm for a person. */
  unknownAlarmMs: number;
}

/** The refund worker, as money/ composes it and the device's controls read it. */
export interface RefundWorker {
  /** Crash recovery: a refund that was being sent has an unknown outcome; returns how many. */
  recover(): number;
  /** Processes what is due; concurrent calls share one pass. */
  run(): Promise<void>;
  /** No new pass; the refund in flight finishes (its answer recorded) before this resolves. */
  stop(): Promise<void>;
  /** Check this invoice's refund now (a webhook or poll brought refund evidence). */
  expedite(invoiceId: string): void;
  /** Every refund, oldest first, or only those in these states. */
  list(states?: RefundRow['state'][]): RefundRow[];
}

/**
 * Sends each requested refund once, with its derived key. An unknown outcome is never re-sent
 * blindly: where the provider guarantees that the same key returns the same refund (Gerege) it is
 * asked again with that key; elsewhere (QutPay) the invoice is read (refunded → done; still paid →
 * read again). Unsettled for too long → alarm for a person.
 */
export function createRefundWorker(
  /** The order service's own deps, less what only it uses: the refund worker reads, observes and refunds the same way. */
  deps: Pick<OrderServiceDeps, 'db' | 'clock' | 'logger' | 'outbox' | 'orderRepository' | 'provider' | 'ledger'> & {
    /** Fiscal receipts: a completed refund of a receipted sale owes its return (written in the same transaction). */
    receipts?: Pick<ReceiptPort, 'refunded'>;
  },
  settings: RefundWorkerSettings,
): RefundWorker {
  const { db, clock, outbox, provider, ledger } = deps;
  const log = deps.logger.child({ module: 'refunds' });
  const orders = deps.orderRepository;
  const transitions = createTransitions(orders);
  let running: Promise<void> | null = null;
  let stopped = false;

  /** Reads the refund's invoice and records that reading through observe(), saying at which stage it was made. */
  async function readAndObserve(row: RefundRow, stage: 'before_send' | 'check') {
    const invoice = await provider.getInvoice(row.invoice_id);
    ledger.observe(observationOf(invoice, 'refund'), { kind: 'refund', refundKind: row.kind, queuedAmount: row.amount, stage });
    return invoice;
  }

  const get = (invoiceId: string) => prepared(db, 'SELECT * FROM refunds WHERE invoice_id = ?').get(invoiceId) as RefundRow | undefined;
  const update = (invoiceId: string, fields: Partial<RefundRow>) => {
    const keys = Object.keys(fields);
    prepared(db, `UPDATE refunds SET ${keys.map((k) => `${k} = ?`).join(', ')}, updated_at = ? WHERE invoice_id = ?`).run(
      ...keys.map((k) => (fields as Record<string, unknown>)[k]),
      clock.now(),
      invoiceId,
    );
  };

  /** Marks the refund done and, when it was the order's own invoice, the order refunded. */
  function complete(row: RefundRow, detail: string): void {
    inTransaction(db, () => {
      const current = get(row.invoice_id);
      if (!current || current.state === 'succeeded') return;
      update(row.invoice_id, { state: 'succeeded', last_error: null });
      const order = orders.get(row.order_id);
      // A reading that showed the money back has moved the order already (through observe()); the
      // provider's answer to our refund itself moves it here.
      if (order && order.state === 'refunding' && order.invoice_id === row.invoice_id) transitions.refundCompleted(order, detail);
      outbox.clearAlarm(`refund_unknown/${row.order_id}`);
      outbox.event('refund.succeeded', { orderId: row.order_id, invoiceId: row.invoice_id, kind: row.kind, amount: row.amount });
      outbox.count('refunds_succeeded');
      deps.receipts?.refunded(row.order_id);
    });
    log.info({ orderId: row.order_id, invoiceId: row.invoice_id, kind: row.kind }, 'refund completed');
  }

  /**
   * Decide by current state: the invoice is read before money is sent. Already refunded (the
   * merchant's dashboard, or a refund whose record a power cut lost) → done without sending; in part
   * → only the rest is sent. Returns the amount to send, or null when nothing is to be sent.
   */
  async function stillOwed(row: RefundRow): Promise<number | null> {
    const invoice = await readAndObserve(row, 'before_send');
    const owed = refundStillOwed(row.kind, invoice, row.amount);
    if (owed === null)
      complete(row, row.kind === 'void' ? 'authorization already canceled at the provider' : 'already refunded at the provider');
    return owed;
  }

  async function send(row: RefundRow): Promise<void> {
    let amount: number | null;
    try {
      amount = await stillOwed(row);
    } catch (err) {
      // Not readable now: nothing was sent; the next pass asks again.
      log.warn({ err, orderId: row.order_id, invoiceId: row.invoice_id }, 'refund: could not read the invoice first; will try again');
      return;
    }
    if (amount === null) return;
    if (amount !== row.amount) {
      inTransaction(db, () => update(row.invoice_id, { amount }));
      row = { ...row, amount };
    }
    // Claim first, power-loss durable (synchronous=FULL): a crash or a power cut between this
    // commit and the provider's answer leaves `sending`, which recovery turns into `unknown` —
    // settled by check(), never by a blind second send.
    const claimed = durably(
      db,
      () =>
        prepared(
          db,
          "UPDATE refunds SET state = 'sending', attempts = attempts + 1, updated_at = ? WHERE invoice_id = ? AND state = 'requested'",
        ).run(clock.now(), row.invoice_id).changes === 1,
      'refund_claim',
    );
    if (!claimed) return;
    try {
      if (row.kind === 'void') {
        const invoice = await provider.cancelInvoice(row.invoice_id);
        ledger.observe(observationOf(invoice, 'refund'), {
          kind: 'refund',
          refundKind: 'void',
          queuedAmount: row.amount,
          stage: 'cancel_answer',
        });
        if (refundDoneByReading('void', invoice.status)) return complete(row, 'authorization canceled');
        return markUnknown(row, `after cancel the invoice is ${invoice.status}`, 'pending');
      }
      const result = await provider.refund({ invoiceId: row.invoice_id, amount: row.amount, idempotencyKey: row.idempotency_key });
      if (result.status === 'succeeded') return complete({ ...row }, 'refund succeeded');
      if (result.status === 'failed') return fail(row, result.detail ?? 'provider refused the refund', result.refundId);
      markUnknown(row, result.detail ?? result.status, result.status === 'pending' ? 'pending' : 'unknown', result.refundId);
    } catch (err) {
      // Whatever failed, we cannot know whether money moved: check() settles it.
      markUnknown(row, errorMessage(err), 'unknown');
    }
  }

  function fail(row: RefundRow, detail: string, refundId?: string): void {
    inTransaction(db, () => {
      update(row.invoice_id, { state: 'failed', last_error: detail, provider_refund_id: refundId ?? null });
      outbox.raiseAlarm(`refund_failed/${row.order_id}`, 'critical', 'the provider refused a refund: give the money back by hand', {
        orderId: row.order_id,
        invoiceId: row.invoice_id,
      });
      outbox.event('refund.failed', { orderId: row.order_id, invoiceId: row.invoice_id, detail });
    });
    log.error({ orderId: row.order_id, invoiceId: row.invoice_id, detail }, 'refund refused by the provider');
  }

  function markUnknown(row: RefundRow, detail: string, state: 'pending' | 'unknown', refundId?: string): void {
    inTransaction(db, () => {
      update(row.invoice_id, {
        state,
        last_error: detail,
        next_check_at: clock.now() + settings.checkIntervalMs,
        ...(refundId ? { provider_refund_id: refundId } : {}),
      });
      if (state === 'unknown') outbox.event('refund.unknown', { orderId: row.order_id, invoiceId: row.invoice_id, detail });
    });
    log.warn({ orderId: row.order_id, invoiceId: row.invoice_id, state, detail }, 'refund outcome not known yet: will read the invoice');
  }

  async function check(row: RefundRow): Promise<void> {
    try {
      if (row.kind === 'refund' && provider.confirmRefund) {
        // Safe by the provider's contract: the same key and body return the same refund.
        const result = await provider.confirmRefund({ invoiceId: row.invoice_id, amount: row.amount, idempotencyKey: row.idempotency_key });
        if (result.status === 'succeeded') return complete(row, 'refund confirmed by the provider');
        if (result.status === 'failed') return fail(row, result.detail ?? 'provider refused the refund', result.refundId);
      } else {
        const invoice = await readAndObserve(row, 'check');
        if (refundDoneByReading(row.kind, invoice.status)) return complete(row, `invoice is ${invoice.status}`);
      }
    } catch (err) {
      if (!(err instanceof ProviderError)) log.error({ err, invoiceId: row.invoice_id }, 'refund check failed');
    }
    const now = clock.now();
    // Checks made so far (the send was attempt 1): how long the outcome has been unknown by the
    // checks' own pace, for a wall clock set back since the refund was made (created_at then lies
    // in the future and the wall-clock age stays negative for as long as the jump).
    const checks = row.attempts;
    const unknownFor = Math.max(now - row.created_at, checks * settings.checkIntervalMs);
    inTransaction(db, () => {
      update(row.invoice_id, { next_check_at: now + settings.checkIntervalMs, attempts: checks + 1 });
      if (!row.alarmed_at && unknownFor >= settings.unknownAlarmMs) {
        update(row.invoice_id, { alarmed_at: now });
        outbox.raiseAlarm(
          `refund_unknown/${row.order_id}`,
          'critical',
          'a refund has had no confirmed outcome for too long: check it with the provider',
          {
            orderId: row.order_id,
            invoiceId: row.invoice_id,
            since: new Date(row.created_at).toISOString(),
          },
        );
      }
    });
  }

  async function runOnce(): Promise<void> {
    const requested = prepared(db, "SELECT * FROM refunds WHERE state = 'requested' ORDER BY created_at").all() as RefundRow[];
    for (const row of requested) await send(row);
    // Due, or scheduled further ahead than any check is ever put off: a wall clock set back after
    // the schedule was written (a Pi without RTC, NTP correcting it) would otherwise stop the
    // checks for as long as the jump.
    const now = clock.now();
    const due = prepared(
      db,
      "SELECT * FROM refunds WHERE state IN ('pending', 'unknown') AND (coalesce(next_check_at, 0) <= ? OR next_check_at > ?) ORDER BY next_check_at",
    ).all(now, now + settings.checkIntervalMs) as RefundRow[];
    for (const row of due) await check(row);
  }

  return {
    /** Crash recovery: a refund that was being sent has an unknown outcome. */
    recover(): number {
      return inTransaction(
        db,
        () =>
          prepared(
            db,
            "UPDATE refunds SET state = 'unknown', next_check_at = 0, last_error = 'process stopped while sending', updated_at = ? WHERE state = 'sending'",
          ).run(clock.now()).changes,
      );
    },
    /** Processes what is due; concurrent calls share one pass. */
    run(): Promise<void> {
      if (stopped) return Promise.resolve();
      running ??= runOnce().finally(() => {
        running = null;
      });
      return running;
    },
    /** No new pass; the refund in flight finishes (its answer recorded) before this resolves. */
    async stop(): Promise<void> {
      stopped = true;
      await running?.catch(() => {});
    },
    /** Check this invoice's refund now (a webhook or poll brought refund evidence). */
    expedite(invoiceId: string): void {
      prepared(db, "UPDATE refunds SET next_check_at = 0 WHERE invoice_id = ? AND state IN ('pending', 'unknown')").run(invoiceId);
    },
    list(states?: RefundRow['state'][]): RefundRow[] {
      const rows = prepared(db, 'SELECT * FROM refunds ORDER BY created_at').all() as RefundRow[];
      return states ? rows.filter((r) => states.includes(r.state)) : rows;
    },
  };
}
