import type { Db } from '../store/index.js';
import { inTransaction } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import { ProviderError, type PaymentProvider, type WebhookEvent } from '../payments/types.js';

/**
 * What the backfill needs of the webhook inbox (channels/webhook/inbox.ts satisfies it). Declared
 * here so that backfill does not import webhook/, which imports backfill: no circle between the two.
 */
export interface BackfillInbox {
  add(event: WebhookEvent, rawBody: Buffer, provider: string, source: 'backfill', now: number): { inserted: boolean; handled: boolean };
  hasWebhookFor(objectId: string, sinceMs?: number): boolean;
  lastWebhookAt(): number | null;
}

export interface BackfillDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  provider: PaymentProvider;
  outbox: Outbox;
  inbox: BackfillInbox;
  /** New rows went into the inbox (the worker's notify). */
  onInserted?: () => void;
}

export interface BackfillSettings {
  /** The poller found a payment and no webhook for it came within this: the channel may be down. */
  silenceGraceSec: number;
  /** A device without a cursor reads this far back. */
  lookbackSec: number;
  /** First wait after a failed run; doubles up to retryMaxMs. Defaults 5 s and 5 min. */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export interface BackfillResult {
  /** The provider has no Events API (QutPay): the poller is the only catch-up. */
  skipped: boolean;
  pages: number;
  seen: number;
  inserted: number;
}

/** meta key of the last event read, `{ eventId, createdSec }`. */
export const BACKFILL_CURSOR_KEY = 'webhook_backfill_cursor';
export const WEBHOOK_SILENT_ALARM = 'webhook_silent';
/** A run never reads more than this many pages; the next trigger continues from the cursor. */
const MAX_PAGES = 200;

/** The last event the backfill read (meta `webhook_backfill_cursor`). */
export interface BackfillCursor {
  eventId: string;
  createdSec: number;
}

/** The Events API catch-up, as the webhook channel and the app drive it. */
export interface Backfill {
  /** The start-up catch-up; does not wait for the provider. */
  start(): void;
  /**
   * Resolves once a read started by or after start() has gone through (the start-up catch-up, or
   * its first retry that succeeds); never rejects. What the Events API held at start is in the inbox then.
   */
  caughtUp(): Promise<void>;
  /** Reads the Events API from the cursor now. Single flight: a call during a run makes it read again. */
  run(reason: string): Promise<BackfillResult>;
  /** The poller recorded a payment before any webhook did: check the webhook channel after the grace period. */
  paymentPolled(invoiceId: string): void;
  /** A verified webhook arrived: the channel works. Clears the silence alarm and catches up on the gap. */
  webhookReceived(): void;
  /** The cursor, for the selftest and tests; null before the first event was read. */
  cursor(): BackfillCursor | null;
  /** Cancels the pending triggers; resolves when the run in flight is over. */
  stop(): Promise<void>;
}

/**
 * Events API catch-up. At start-up, and when the webhook channel has gone silent while the poller
 * found payments (a tunnel outage), it pages the provider's events from the last one seen and puts
 * them into the same inbox, so a missed event is handled exactly like a delivered one.
 */
export function createBackfill(deps: BackfillDeps, settings: BackfillSettings): Backfill {
  const { db, clock, provider, outbox, inbox } = deps;
  const log = deps.logger.child({ module: 'backfill' });
  const retryBaseMs = settings.retryBaseMs ?? 5_000;
  const retryMaxMs = settings.retryMaxMs ?? 300_000;
  const readCursor = db.prepare('SELECT value FROM meta WHERE key = ?');
  const writeCursor = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
  const timers = new Set<NodeJS.Timeout>();
  let running: Promise<BackfillResult> | null = null;
  /** Why another pass is wanted (a trigger that came during a run), or null. */
  let rerunReason: string | null = null;
  let failures = 0;
  let silentAlarmOpen = false;
  /** Not started (or stopped): no timers, no alarms. run() still works (the CLI uses it without start()). */
  let stopped = true;
  /** stop() was called: no further passes or retries. */
  let halted = false;
  let markCaughtUp: () => void = () => {};
  const caughtUp = new Promise<void>((resolve) => {
    markCaughtUp = resolve;
  });

  function later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timer.unref?.();
    timers.add(timer);
  }

  function cursor(): BackfillCursor | null {
    const row = readCursor.get(BACKFILL_CURSOR_KEY) as { value: string } | undefined;
    if (!row) return null;
    try {
      const parsed = JSON.parse(row.value) as Partial<BackfillCursor>;
      return typeof parsed.eventId === 'string' && typeof parsed.createdSec === 'number'
        ? { eventId: parsed.eventId, createdSec: parsed.createdSec }
        : null;
    } catch {
      return null;
    }
  }

  async function readAll(): Promise<BackfillResult> {
    const listEvents = provider.listEvents?.bind(provider);
    if (!listEvents) return { skipped: true, pages: 0, seen: 0, inserted: 0 };
    const start = cursor();
    const fallback = { createdAfterSec: start?.createdSec ?? Math.floor(clock.now() / 1000) - settings.lookbackSec };
    let query: { createdAfterSec?: number; startingAfter?: string } = start ? { startingAfter: start.eventId } : fallback;
    const result: BackfillResult = { skipped: false, pages: 0, seen: 0, inserted: 0 };
    while (result.pages < MAX_PAGES) {
      let page;
      try {
        page = await listEvents(query);
      } catch (err) {
        // The provider forgot the cursor's event (retention): read by time instead; the inbox dedupes the overlap.
        if (err instanceof ProviderError && err.kind === 'rejected' && query.startingAfter !== undefined && result.pages === 0) {
          log.warn({ startingAfter: query.startingAfter }, 'the provider no longer knows the backfill cursor; reading by time');
          query = fallback;
          continue;
        }
        throw err;
      }
      result.pages += 1;
      result.seen += page.events.length;
      const now = clock.now();
      const last = page.events.at(-1);
      result.inserted += inTransaction(db, () => {
        let inserted = 0;
        for (const { event, rawBody } of page.events) {
          const stored = inbox.add(event, rawBody, provider.name, 'backfill', now);
          if (stored.inserted && stored.handled) inserted += 1;
        }
        if (last) {
          const createdSec = last.event.createdAt === null ? Math.floor(now / 1000) : Math.floor(last.event.createdAt / 1000);
          writeCursor.run(BACKFILL_CURSOR_KEY, JSON.stringify({ eventId: last.event.eventId, createdSec }));
        }
        return inserted;
      });
      if (!page.hasMore || !last) break;
      query = { startingAfter: last.event.eventId };
    }
    return result;
  }

  async function runOnce(firstReason: string): Promise<BackfillResult> {
    let reason = firstReason;
    for (;;) {
      const started = clock.now();
      const result = await readAll();
      failures = 0;
      if (result.inserted > 0) deps.onInserted?.();
      if (!stopped) markCaughtUp();
      if (result.skipped) return result;
      log.info({ reason, pages: result.pages, seen: result.seen, inserted: result.inserted, ms: clock.now() - started }, 'backfill done');
      // A trigger during a pass asks for another: events may have been created after this pass listed.
      if (rerunReason === null || halted) return result;
      reason = rerunReason;
      rerunReason = null;
    }
  }

  function run(reason: string): Promise<BackfillResult> {
    if (running) {
      rerunReason = reason;
      return running;
    }
    running = runOnce(reason)
      .catch((err: unknown) => {
        failures += 1;
        const wait = Math.min(retryMaxMs, retryBaseMs * 2 ** (failures - 1));
        log.warn({ err, reason, failures, retryInMs: wait }, 'backfill failed; will retry');
        // The retry's own failure schedules the next one (this handler, again): it must never reject
        // unheard, or a provider outage at start-up would end the process.
        if (!stopped)
          later(wait, () => {
            void run(`retry: ${reason}`).catch(() => {});
          });
        throw err;
      })
      .finally(() => {
        running = null;
      });
    return running;
  }

  function raiseSilent(invoiceId: string, lastWebhookAt: number | null): void {
    if (silentAlarmOpen) return;
    silentAlarmOpen = true;
    inTransaction(db, () =>
      outbox.raiseAlarm(
        WEBHOOK_SILENT_ALARM,
        'warning',
        'no webhook arrived while the poller found a payment: is the tunnel down? Payments are still found by polling',
        {
          invoiceId,
          lastWebhookAt: lastWebhookAt === null ? null : new Date(lastWebhookAt).toISOString(),
        },
      ),
    );
    log.warn({ invoiceId, lastWebhookAt }, 'webhook channel silent while the poller found a payment');
  }

  /** After the grace period: did the webhook for this payment come, and did any webhook come at all? */
  function checkAfterGrace(invoiceId: string, foundAt: number): void {
    if (stopped) return;
    const graceMs = settings.silenceGraceSec * 1000;
    if (inbox.hasWebhookFor(invoiceId, foundAt - graceMs)) return;
    const lastWebhookAt = inbox.lastWebhookAt();
    if (lastWebhookAt === null || lastWebhookAt < foundAt) raiseSilent(invoiceId, lastWebhookAt);
    void run('a payment found by polling had no webhook').catch(() => {});
  }

  return {
    /** The start-up catch-up; does not wait for the provider. */
    start(): void {
      if (!stopped) return;
      stopped = false;
      silentAlarmOpen = outbox.openAlarms().some((alarm) => alarm.name === WEBHOOK_SILENT_ALARM);
      void run('start-up').catch(() => {});
    },
    caughtUp: () => caughtUp,
    /** Reads the Events API from the cursor now. Single flight: a call during a run makes it read again. */
    run,
    /** The poller recorded a payment before any webhook did: check the webhook channel after the grace period. */
    paymentPolled(invoiceId: string): void {
      if (stopped) return;
      const foundAt = clock.now();
      later(settings.silenceGraceSec * 1000, () => checkAfterGrace(invoiceId, foundAt));
    },
    /** A verified webhook arrived: the channel works. Clears the silence alarm and catches up on the gap. */
    webhookReceived(): void {
      if (!silentAlarmOpen || stopped) return;
      silentAlarmOpen = false;
      inTransaction(db, () => outbox.clearAlarm(WEBHOOK_SILENT_ALARM));
      log.info('webhooks arrive again');
      void run('webhooks resumed').catch(() => {});
    },
    /** The cursor, for the selftest and tests. */
    cursor,
    async stop(): Promise<void> {
      stopped = true;
      halted = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await running?.catch(() => {});
    },
  };
}
