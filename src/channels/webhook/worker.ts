import type { Db } from '../../store/index.js';
import { inTransaction } from '../../store/index.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { errorMessage } from '../../util/errors.js';
import type { Outbox } from '../../outbox/index.js';
import { ProviderError, type PaymentProvider } from '../../payments/types.js';
import { observationOf, type Ledger, type ObserveResult } from '../../ledger/index.js';
import { isHandledEvent, NOT_THIS_DEVICE, type InboxRow, type WebhookInbox } from './inbox.js';
import { isUnconfirmedClaim, settleRefundClaim } from './refund-claims.js';

export interface WebhookWorkerDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  provider: PaymentProvider;
  ledger: Ledger;
  outbox: Outbox;
  inbox: WebhookInbox;
  /**
   * False when no order of this device has the invoice: the event (another device of the same
   * merchant) is acknowledged and ignored without a GET. Without it, the ledger decides after the GET.
   */
  knowsInvoice?: (invoiceId: string) => boolean;
}

export interface WebhookWorkerSettings {
  retryBaseMs: number;
  retryMaxMs: number;
  alarmAfterAttempts: number;
  /** Rows processed at the same time (each is a GET). Default 4. */
  concurrency?: number;
}

export type RowOutcome = 'recorded' | 'duplicate' | 'ignored' | 'rejected' | 'failed';

export interface ReplayReport {
  events: number;
  outcomes: Record<RowOutcome, number>;
}

const BATCH = 50;
/** Even with nothing due, look again this often: a row written by another process (replay CLI) is found. */
const SAFETY_SWEEP_MS = 30_000;
/** The longest a provider's Retry-After puts an event's retry off (the poller still watches its invoice meanwhile). */
const RETRY_AFTER_MAX_MS = 3_600_000;

/** The webhook_stuck alarm of one event. */
export const stuckAlarmName = (eventId: string) => `webhook_stuck/${eventId}`;

/** The worker that turns inbox rows into observations (the webhook side of the money path). */
export interface WebhookWorker {
  /** Starts draining, beginning with rows a crash left unprocessed. */
  start(): void;
  /** A new row is in the inbox (in-process; the handler never waits for this). */
  notify(): void;
  /** Resolves when the current pass (if any) is over (tests). */
  idle(): Promise<void>;
  /**
   * Re-runs stored events received since `sinceMs` through the worker path with channel 'replay'.
   * Safe at any time: the ledger records each (invoice, status) once.
   */
  replay(sinceMs: number): Promise<ReplayReport>;
  /** No new pass; resolves when the pass in progress is over. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Drains the inbox: for each unprocessed event, GET the object's current state (never the event
 * body's status), observe() it, mark the row processed. A failing row backs off on its own schedule
 * and raises an alarm after `alarmAfterAttempts` without holding up the others. Rows a crash left
 * unprocessed are found by start(): everything it needs is in the table.
 */
export function createWebhookWorker(deps: WebhookWorkerDeps, settings: WebhookWorkerSettings): WebhookWorker {
  const { db, clock, provider, ledger, outbox, inbox } = deps;
  const log = deps.logger.child({ module: 'webhook-worker' });
  const concurrency = Math.max(1, settings.concurrency ?? 4);
  /** No retry is put off longer: a row scheduled further ahead was written before the wall clock was set back. */
  const longestWait = Math.max(settings.retryMaxMs, RETRY_AFTER_MAX_MS);
  const inFlight = new Set<string>();
  const cooling = new Map<string, number>();
  let pass: Promise<void> | null = null;
  let again = false;
  let timer: NodeJS.Timeout | null = null;
  let stopped = true;
  /** The last pass failed as a whole (database trouble): the next waits retryBaseMs instead of spinning. */
  let lastPassFailed = false;

  function finish(row: InboxRow, note: string | null): void {
    inTransaction(db, () => {
      inbox.markProcessed(row.event_id, clock.now(), note);
      if (row.attempts >= settings.alarmAfterAttempts) outbox.clearAlarm(stuckAlarmName(row.event_id));
    });
  }

  function fail(row: InboxRow, err: unknown): RowOutcome {
    const attempt = row.attempts + 1;
    const backoff = Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** (attempt - 1));
    const wait =
      err instanceof ProviderError && err.retryAfterMs !== undefined ? Math.min(Math.max(err.retryAfterMs, backoff), longestWait) : backoff;
    const message = errorMessage(err);
    const attempts = inTransaction(db, () => {
      const counted = inbox.markFailed(row.event_id, clock.now() + wait, message);
      if (counted === settings.alarmAfterAttempts) {
        outbox.raiseAlarm(stuckAlarmName(row.event_id), 'warning', 'a webhook event keeps failing; the poller still watches its invoice', {
          eventId: row.event_id,
          invoiceId: row.object_id,
          attempts: counted,
          lastError: message,
        });
      }
      return counted;
    });
    log.warn({ err, eventId: row.event_id, invoiceId: row.object_id, attempts, retryInMs: wait }, 'webhook event failed; will retry');
    return 'failed';
  }

  /** Why a row needs no GET at all (acknowledged and ignored), or null when it does. */
  function ignoreReason(row: InboxRow): string | null {
    if (row.object_id === null || !isHandledEvent({ type: row.type, objectId: row.object_id })) return 'event type not handled';
    if (deps.knowsInvoice && !deps.knowsInvoice(row.object_id)) return NOT_THIS_DEVICE;
    return null;
  }

  /** The worker path: also what `vendgate replay` runs, with channel 'replay'. */
  async function processRow(row: InboxRow, channel: 'webhook' | 'backfill' | 'replay'): Promise<RowOutcome> {
    const reason = ignoreReason(row);
    if (reason !== null) {
      finish(row, reason);
      log.debug({ eventId: row.event_id, invoiceId: row.object_id, reason }, 'webhook event ignored');
      return 'ignored';
    }
    const invoiceId = row.object_id!;
    // A refund the body reports counts only once the provider lists the same event (refund-claims.ts).
    if (isUnconfirmedClaim(row)) {
      const claim = await settleRefundClaim({ db, clock, outbox, provider, inbox, log }, row);
      if (claim.kind === 'forged') return 'rejected';
      if (claim.kind === 'retry') return fail(row, claim.error);
    }
    let result: ObserveResult;
    try {
      const invoice = await provider.getInvoice(invoiceId);
      result = ledger.observe(observationOf(invoice, channel, row.event_id));
    } catch (err) {
      if (err instanceof ProviderError && err.kind === 'not_found') {
        finish(row, 'the provider does not know this object');
        log.warn({ eventId: row.event_id, invoiceId }, 'webhook event about an object the provider does not know: ignored');
        return 'ignored';
      }
      return fail(row, err);
    }
    switch (result.outcome) {
      case 'unknown_invoice':
        finish(row, NOT_THIS_DEVICE);
        return 'ignored';
      case 'rejected':
        finish(row, `rejected: ${result.reason}`);
        return 'rejected';
      default:
        finish(row, null);
        return result.outcome;
    }
  }

  /** Runs rows `concurrency` at a time. `keepGoing` is checked between rows (stop() ends a pass early). */
  async function runRows(
    rows: InboxRow[],
    channelOf: (row: InboxRow) => 'webhook' | 'backfill' | 'replay',
    keepGoing: () => boolean,
    tally: (outcome: RowOutcome) => void = () => {},
  ): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (next < rows.length && keepGoing()) {
        const row = rows[next++]!;
        if (inFlight.has(row.event_id)) continue;
        inFlight.add(row.event_id);
        try {
          tally(await processRow(row, channelOf(row)));
        } catch (err) {
          // Not even the failure could be recorded (database error): keep away from the row for a while.
          cooling.set(row.event_id, clock.now() + settings.retryBaseMs);
          log.error({ err, eventId: row.event_id }, 'webhook event could not be processed');
          tally('failed');
        } finally {
          inFlight.delete(row.event_id);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, rows.length) }, lane));
  }

  function dueRows(): InboxRow[] {
    const now = clock.now();
    for (const [id, until] of cooling) if (until <= now) cooling.delete(id);
    return inbox.due(now, BATCH, longestWait).filter((row) => !inFlight.has(row.event_id) && !cooling.has(row.event_id));
  }

  async function drainOnce(): Promise<void> {
    do {
      again = false;
      for (;;) {
        if (stopped) return;
        const rows = dueRows();
        if (rows.length === 0) break;
        // Events of other devices (or of types we ignore) need no GET: acknowledge them in one commit.
        const work: InboxRow[] = [];
        inTransaction(db, () => {
          for (const row of rows) {
            const reason = ignoreReason(row);
            if (reason === null) work.push(row);
            else finish(row, reason);
          }
        });
        await runRows(
          work,
          (row) => (row.source === 'backfill' ? 'backfill' : 'webhook'),
          () => !stopped,
        );
      }
    } while (again && !stopped);
  }

  function nextWait(): number {
    if (lastPassFailed) return settings.retryBaseMs;
    const at = inbox.nextDueAt();
    const now = clock.now();
    if (at === null) return SAFETY_SWEEP_MS;
    // Further ahead than any retry is put off: written before the wall clock was set back, due now.
    if (at > now && at <= now + longestWait) return Math.min(SAFETY_SWEEP_MS, at - now);
    // Due but not taken: only rows cooling down after a database error. Do not spin on them.
    return cooling.size > 0 ? settings.retryBaseMs : 0;
  }

  function scheduleNext(): void {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    let wait: number;
    try {
      wait = nextWait();
    } catch (err) {
      log.error({ err }, 'webhook inbox unreadable; trying again');
      wait = settings.retryBaseMs;
    }
    timer = setTimeout(kick, wait);
    timer.unref?.();
  }

  function kick(): void {
    if (stopped) return;
    if (pass) {
      again = true;
      return;
    }
    pass = drainOnce()
      .then(() => {
        lastPassFailed = false;
      })
      .catch((err) => {
        lastPassFailed = true;
        log.error({ err }, 'webhook worker pass failed');
      })
      .finally(() => {
        pass = null;
        scheduleNext();
      });
  }

  return {
    /** Starts draining, beginning with rows a crash left unprocessed. */
    start(): void {
      if (!stopped) return;
      stopped = false;
      const unprocessed = inbox.unprocessedCount();
      if (unprocessed > 0) log.info({ unprocessed }, 'resuming webhook events left unprocessed');
      kick();
    },
    /** A new row is in the inbox (in-process; the handler never waits for this). */
    notify(): void {
      kick();
    },
    /** Resolves when the current pass (if any) is over (tests). */
    async idle(): Promise<void> {
      while (pass) await pass;
    },
    /**
     * Re-runs stored events received since `sinceMs` through the worker path with channel 'replay'.
     * Safe at any time: the ledger records each (invoice, status) once.
     */
    async replay(sinceMs: number): Promise<ReplayReport> {
      const rows = inbox.since(sinceMs).filter((row) => isHandledEvent({ type: row.type, objectId: row.object_id }));
      const outcomes: Record<RowOutcome, number> = { recorded: 0, duplicate: 0, ignored: 0, rejected: 0, failed: 0 };
      await runRows(
        rows,
        () => 'replay',
        () => true,
        (outcome) => {
          outcomes[outcome] += 1;
        },
      );
      return { events: rows.length, outcomes };
    },
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await pass;
    },
  };
}
