import type { Db } from '../../store/index.js';
import type { WebhookEvent } from '../../payments/types.js';
import { createGroupCommit } from './group-commit.js';

/** Where a row came from: delivered to the listener, or read from the provider's Events API. */
export type InboxSource = 'webhook' | 'backfill';

/** A row as the worker sees it (without the raw body, which only audits and `get` need). */
export interface InboxRow {
  event_id: string;
  provider: string;
  type: string;
  object_id: string | null;
  livemode: number | null;
  source: InboxSource;
  received_at: number;
  processed_at: number | null;
  attempts: number;
  next_attempt_at: number | null;
  last_error: string | null;
  /** A succeeded refund the body reports (a claim until confirmed: refund-claims.ts). */
  refund_id: string | null;
  refund_amount: number | null;
  refund_confirmed_at: number | null;
  /** The body's own creation time (ms), when it says. */
  event_created_at: number | null;
}

const ROW_COLUMNS =
  'event_id, provider, type, object_id, livemode, source, received_at, processed_at, attempts, next_attempt_at, last_error, ' +
  'refund_id, refund_amount, refund_confirmed_at, event_created_at';

/**
 * Event types whose object we re-read. Anything else (a type added in a provider's minor version,
 * an object we do not track) is stored for audit and dedupe, marked processed, and ignored.
 */
const HANDLED_TYPE = /^(payment_intent|invoice|refund)\./;

export function isHandledEvent(event: Pick<WebhookEvent, 'type' | 'objectId'>): boolean {
  return event.objectId !== null && HANDLED_TYPE.test(event.type);
}

/** The durable inbox of webhook events (`webhook_events`), deduplicated by event id. */
export interface WebhookInbox {
  /**
   * Stores a verified event once. `inserted` is false when its id is already there (a duplicate). An
   * event the worker has nothing to do for is stored already processed (`handled` false).
   */
  add(event: WebhookEvent, rawBody: Buffer, provider: string, source: InboxSource, now: number): { inserted: boolean; handled: boolean };
  /** add() for the listener: deliveries of the same event-loop turn share one commit; resolves once committed. */
  addCommitted(
    event: WebhookEvent,
    rawBody: Buffer,
    provider: string,
    source: InboxSource,
    now: number,
  ): Promise<{ inserted: boolean; handled: boolean }>;
  /** Unprocessed rows whose retry time has come, oldest first. */
  /**
   * Unprocessed rows due at `now`, and those scheduled later than `now + longestWait`: no retry is
   * ever put off that long, so the wall clock was set back since it was written (and would hold the
   * event back for as long as the jump).
   */
  due(now: number, limit: number, longestWait: number): InboxRow[];
  /** When the next unprocessed row becomes due (ms), or null when the inbox is empty. */
  nextDueAt(): number | null;
  /** The worker is done with the event; false when it was not there or already processed. */
  markProcessed(eventId: string, now: number, note?: string | null): boolean;
  /** Counts a failed attempt and schedules the next; returns the attempts so far. */
  markFailed(eventId: string, nextAttemptAt: number, error: string): number;
  /** One stored event with its exact raw body. */
  get(eventId: string): (InboxRow & { raw_body: Buffer }) | undefined;
  /** Every stored event received at or after `sinceMs`, processed or not (replay). */
  since(sinceMs: number): InboxRow[];
  /** True when a webhook (not a backfilled event) about this invoice was delivered at or after `sinceMs`. */
  hasWebhookFor(objectId: string, sinceMs?: number): boolean;
  /** When the last webhook (not a backfilled event) arrived (ms), or null. */
  lastWebhookAt(): number | null;
  /** Rows the worker has not processed yet. */
  unprocessedCount(): number;
}

/** The note on an event about an invoice no order of this device has (acknowledged, ignored). */
export const NOT_THIS_DEVICE = 'not an invoice of this device';

export interface WebhookInboxOptions {
  /**
   * False when no order of this device has the invoice. Such an event (another device of the same
   * merchant) is stored already processed, with the note the worker would write: the worker would
   * only acknowledge it, and doing that in the insert saves it a pass, a query and a commit per
   * event. Without it, every event of a handled type waits for the worker.
   */
  knowsInvoice?: (invoiceId: string) => boolean;
}

/** The SQL of `webhook_events`: the durable, deduplicating inbox both the listener and the backfill feed. */
export function createWebhookInbox(db: Db, options: WebhookInboxOptions = {}): WebhookInbox {
  const insert = db.prepare(
    `INSERT INTO webhook_events (event_id, provider, type, object_id, livemode, raw_body, source, received_at, processed_at, last_error,
                                 refund_id, refund_amount, reference, event_created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
  );
  // rowid order is arrival order (received_at is set at insert), and it lets SQLite walk the partial
  // index of unprocessed rows without sorting a backlog. The raw body stays on disk: the worker re-reads by GET.
  const due = db.prepare(
    `SELECT ${ROW_COLUMNS} FROM webhook_events
      WHERE processed_at IS NULL AND (coalesce(next_attempt_at, 0) <= ? OR next_attempt_at > ?)
      ORDER BY rowid LIMIT CAST(? AS INTEGER)`,
  );
  const nextDue = db.prepare('SELECT min(coalesce(next_attempt_at, 0)) AS at FROM webhook_events WHERE processed_at IS NULL');
  const processed = db.prepare('UPDATE webhook_events SET processed_at = ?, last_error = ? WHERE event_id = ? AND processed_at IS NULL');
  const failed = db.prepare(
    'UPDATE webhook_events SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE event_id = ? AND processed_at IS NULL RETURNING attempts',
  );
  const get = db.prepare('SELECT * FROM webhook_events WHERE event_id = ?');
  const since = db.prepare(`SELECT ${ROW_COLUMNS} FROM webhook_events WHERE received_at >= ? ORDER BY received_at, rowid`);
  const webhookForObject = db.prepare(
    "SELECT 1 FROM webhook_events WHERE object_id = ? AND source = 'webhook' AND received_at >= ? LIMIT 1",
  );
  const lastWebhook = db.prepare("SELECT max(received_at) AS at FROM webhook_events WHERE source = 'webhook'");
  const unprocessed = db.prepare('SELECT count(*) AS n FROM webhook_events WHERE processed_at IS NULL');
  const isProcessed = db.prepare('SELECT processed_at IS NOT NULL AS done FROM webhook_events WHERE event_id = ?');
  const schedule = db.prepare('UPDATE webhook_events SET next_attempt_at = ? WHERE event_id = ? AND processed_at IS NULL');

  function add(
    event: WebhookEvent,
    rawBody: Buffer,
    provider: string,
    source: InboxSource,
    now: number,
  ): { inserted: boolean; handled: boolean } {
    const first = addOne(event, rawBody, provider, source, now);
    if (first.inserted || !event.later) return first;
    // A hint whose window's twin was already worked: its successor, due when the next window opens.
    const done = (isProcessed.get(event.eventId) as { done: number } | undefined)?.done === 1;
    if (!done) return first;
    const next = addOne(event.later.event, rawBody, provider, source, now);
    if (next.inserted && next.handled) schedule.run(event.later.notBefore, event.later.event.eventId);
    return next;
  }

  function addOne(
    event: WebhookEvent,
    rawBody: Buffer,
    provider: string,
    source: InboxSource,
    now: number,
  ): { inserted: boolean; handled: boolean } {
    const foreign = isHandledEvent(event) && event.objectId !== null && options.knowsInvoice?.(event.objectId) === false;
    const handled = isHandledEvent(event) && !foreign;
    const livemode = event.livemode === null ? null : event.livemode ? 1 : 0;
    const note = foreign ? NOT_THIS_DEVICE : null;
    const result = insert.run(
      event.eventId,
      provider,
      event.type,
      event.objectId,
      livemode,
      rawBody,
      source,
      now,
      handled ? null : now,
      note,
      event.refund?.id ?? null,
      event.refund?.amount ?? null,
      event.reference ?? null,
      event.createdAt,
    );
    return { inserted: result.changes === 1, handled };
  }
  const addGrouped = createGroupCommit(db, (a: Parameters<typeof add>) => add(...a));

  return {
    /**
     * Stores a verified event once. Returns false when its id is already there (a duplicate). An
     * event the worker has nothing to do for (a type we ignore, another device's invoice) is stored
     * already processed; `handled` says whether the worker must look at it.
     */
    add,
    /** add() for the listener: deliveries of the same event-loop turn share one commit; resolves once committed. */
    addCommitted: (...delivery) => addGrouped(delivery),
    /** Unprocessed rows whose retry time has come, oldest first. */
    due(now: number, limit: number, longestWait: number): InboxRow[] {
      return due.all(now, now + longestWait, limit) as InboxRow[];
    },
    /** When the next unprocessed row becomes due (ms), or null when the inbox is empty. */
    nextDueAt(): number | null {
      return (nextDue.get() as { at: number | null }).at;
    },
    markProcessed(eventId: string, now: number, note: string | null = null): boolean {
      return processed.run(now, note, eventId).changes === 1;
    },
    /** Counts a failed attempt and schedules the next; returns the attempts so far. */
    markFailed(eventId: string, nextAttemptAt: number, error: string): number {
      const row = failed.get(nextAttemptAt, error.slice(0, 500), eventId) as { attempts: number } | undefined;
      return row?.attempts ?? 0;
    },
    get(eventId: string): (InboxRow & { raw_body: Buffer }) | undefined {
      return get.get(eventId) as (InboxRow & { raw_body: Buffer }) | undefined;
    },
    /** Every stored event received at or after `sinceMs`, processed or not (replay). */
    since(sinceMs: number): InboxRow[] {
      return since.all(sinceMs) as InboxRow[];
    },
    /** True when a webhook (not a backfilled event) about this invoice was delivered at or after `sinceMs`. */
    hasWebhookFor(objectId: string, sinceMs = 0): boolean {
      return webhookForObject.get(objectId, sinceMs) !== undefined;
    },
    lastWebhookAt(): number | null {
      return (lastWebhook.get() as { at: number | null }).at;
    },
    unprocessedCount(): number {
      return (unprocessed.get() as { n: number }).n;
    },
  };
}
