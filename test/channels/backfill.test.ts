import { describe, expect, it, vi } from 'vitest';
import { ProviderError, type EventPage, type PaymentProvider, type WebhookEvent } from '../../src/payments/types.js';
import { createWebhookInbox } from '../../src/channels/webhook/index.js';
import { createBackfill, BACKFILL_CURSOR_KEY, WEBHOOK_SILENT_ALARM } from '../../src/channels/backfill.js';
import { coreOnFakeTimeouts, type Core } from '../helpers/core.js';

const GRACE_SEC = 30;

/** An Events API over a list the test appends to: oldest first, `pageSize` per page, Gerege paging rules. */
function eventsApi(pageSize: number) {
  const events: WebhookEvent[] = [];
  const queries: { createdAfterSec?: number; startingAfter?: string }[] = [];
  let failNext: Error | null = null;
  let forgotten = new Set<string>();
  async function listEvents(query: { createdAfterSec?: number; startingAfter?: string }): Promise<EventPage> {
    queries.push(query);
    if (failNext) {
      const err = failNext;
      failNext = null;
      throw err;
    }
    let start = 0;
    if (query.startingAfter !== undefined) {
      if (forgotten.has(query.startingAfter))
        throw new ProviderError('rejected', `starting_after: no event ${query.startingAfter}`, { httpStatus: 400 });
      start = events.findIndex((e) => e.eventId === query.startingAfter) + 1;
    }
    const matching = events
      .slice(start)
      .filter((e) => query.createdAfterSec === undefined || (e.createdAt ?? 0) >= query.createdAfterSec * 1000);
    return {
      events: matching
        .slice(0, pageSize)
        .map((event) => ({ event, rawBody: Buffer.from(JSON.stringify({ id: event.eventId, type: event.type })) })),
      hasMore: matching.length > pageSize,
    };
  }
  return {
    events,
    queries,
    listEvents,
    add(count: number, createdAtMs: number) {
      for (let i = 0; i < count; i += 1) {
        events.push({
          eventId: `evt_${events.length + 1}`,
          type: 'invoice.paid',
          objectId: `fk_${events.length + 1}`,
          livemode: false,
          createdAt: createdAtMs,
        });
      }
    },
    failOnce(err: Error) {
      failNext = err;
    },
    /** Retention: the provider drops the event (it is neither listed nor usable as a cursor). */
    forget(eventId: string) {
      forgotten = new Set([...forgotten, eventId]);
      events.splice(
        events.findIndex((e) => e.eventId === eventId),
        1,
      );
    },
  };
}

describe('Events backfill', () => {
  let core: Core;
  coreOnFakeTimeouts((c) => (core = c));

  /** A verified webhook for `objectId`'s payment lands in the inbox now. */
  function webhookArrives(inbox: ReturnType<typeof createWebhookInbox>, eventId: string, objectId: string): void {
    inbox.add(
      { eventId, type: 'invoice.paid', objectId, livemode: false, createdAt: null },
      Buffer.from('{}'),
      'sandbox',
      'webhook',
      core.clock.now(),
    );
  }

  function setup(options: { pageSize?: number; withEvents?: boolean } = {}) {
    const api = eventsApi(options.pageSize ?? 2);
    const provider: PaymentProvider =
      options.withEvents === false ? core.fake.provider : { ...core.fake.provider, listEvents: api.listEvents };
    const inbox = createWebhookInbox(core.db);
    let notified = 0;
    const backfill = createBackfill(
      {
        db: core.db,
        clock: core.clock,
        logger: core.logger,
        provider,
        outbox: core.outbox,
        inbox,
        onInserted: () => {
          notified += 1;
        },
      },
      {
        silenceGraceSec: GRACE_SEC,
        lookbackSec: 3_600,
      },
    );
    const rows = () =>
      core.db.prepare('SELECT event_id, source, processed_at FROM webhook_events ORDER BY rowid').all() as {
        event_id: string;
        source: string;
        processed_at: number | null;
      }[];
    const alarms = () => core.outbox.openAlarms().map((a) => a.name);
    return { api, inbox, backfill, rows, alarms, notified: () => notified };
  }

  it('pages the Events API from the look-back window into the inbox as backfill rows and keeps a cursor', async () => {
    const { api, backfill, rows, notified } = setup();
    api.add(5, core.clock.now() - 60_000);
    const result = await backfill.run('test');
    expect(result).toEqual({ skipped: false, pages: 3, seen: 5, inserted: 5 });
    expect(api.queries[0]).toEqual({ createdAfterSec: Math.floor(core.clock.now() / 1000) - 3_600 });
    expect(api.queries.slice(1)).toEqual([{ startingAfter: 'evt_2' }, { startingAfter: 'evt_4' }]);
    expect(rows().map((r) => [r.event_id, r.source, r.processed_at])).toEqual([1, 2, 3, 4, 5].map((i) => [`evt_${i}`, 'backfill', null]));
    expect(backfill.cursor()).toEqual({ eventId: 'evt_5', createdSec: Math.floor((core.clock.now() - 60_000) / 1000) });
    expect(notified()).toBe(1);
  });

  it('reads only what came after the cursor next time, and never stores an event twice', async () => {
    const { api, inbox, backfill, rows } = setup();
    api.add(3, core.clock.now());
    await backfill.run('first');
    api.add(2, core.clock.now());
    // evt_4 was delivered as a webhook in the meantime.
    inbox.add(api.events[3]!, Buffer.from('{}'), 'sandbox', 'webhook', core.clock.now());
    const second = await backfill.run('second');
    expect(api.queries.at(-1)).toEqual({ startingAfter: 'evt_3' });
    expect(second).toMatchObject({ seen: 2, inserted: 1 });
    expect(rows().map((r) => `${r.event_id}:${r.source}`)).toEqual([
      'evt_1:backfill',
      'evt_2:backfill',
      'evt_3:backfill',
      'evt_4:webhook',
      'evt_5:backfill',
    ]);
  });

  it('reads by time when the provider no longer knows the cursor event', async () => {
    const { api, backfill, rows } = setup();
    api.add(2, core.clock.now() - 5_000);
    await backfill.run('first');
    api.add(1, core.clock.now());
    api.forget('evt_1');
    api.forget('evt_2');
    const result = await backfill.run('after retention');
    expect(api.queries.at(-1)).toEqual({ createdAfterSec: Math.floor((core.clock.now() - 5_000) / 1000) });
    expect(result.inserted).toBe(1);
    expect(rows().map((r) => r.event_id)).toEqual(['evt_1', 'evt_2', 'evt_3']);
  });

  it('reads again after the current pass when a trigger comes during it', async () => {
    const { api, rows } = setup({ pageSize: 10 });
    api.add(1, core.clock.now());
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const list = api.listEvents;
    let calls = 0;
    const slowFirst = async (query: Parameters<typeof list>[0]) => {
      calls += 1;
      if (calls === 1) await gate;
      return list(query);
    };
    const provider: PaymentProvider = { ...core.fake.provider, listEvents: slowFirst };
    const gated = createBackfill(
      { db: core.db, clock: core.clock, logger: core.logger, provider, outbox: core.outbox, inbox: createWebhookInbox(core.db) },
      { silenceGraceSec: GRACE_SEC, lookbackSec: 3_600 },
    );
    const first = gated.run('first');
    await vi.advanceTimersByTimeAsync(0);
    // An event is created after the first pass asked for its page, and a second trigger arrives.
    api.add(1, core.clock.now());
    const second = gated.run('second');
    expect(second).toBe(first);
    release();
    await first;
    expect(calls).toBe(2);
    expect(rows().map((r) => r.event_id)).toEqual(['evt_1', 'evt_2']);
  });

  it('skips providers without an Events API', async () => {
    const { backfill, rows } = setup({ withEvents: false });
    expect(await backfill.run('test')).toEqual({ skipped: true, pages: 0, seen: 0, inserted: 0 });
    expect(rows()).toEqual([]);
    expect(core.db.prepare('SELECT value FROM meta WHERE key = ?').get(BACKFILL_CURSOR_KEY)).toBeUndefined();
  });

  it('retries a failed start-up run with backoff until it succeeds', async () => {
    const { api, backfill, rows } = setup();
    api.add(1, core.clock.now());
    api.failOnce(new ProviderError('server', 'HTTP 503', { httpStatus: 503 }));
    backfill.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(rows()).toEqual([]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(rows().map((r) => r.event_id)).toEqual(['evt_1']);
    await backfill.stop();
    await backfill.stop();
  });

  it('raises webhook_silent and reads the Events API when the poller found a payment and no webhook came within the grace; the next webhook clears it', async () => {
    const { api, backfill, alarms, rows } = setup();
    backfill.start();
    await vi.advanceTimersByTimeAsync(0);
    const runsBefore = api.queries.length;
    api.add(1, core.clock.now());
    backfill.paymentPolled('fk_1');
    core.clock.advance(GRACE_SEC * 1000 - 1);
    await vi.advanceTimersByTimeAsync(GRACE_SEC * 1000 - 1);
    expect(alarms()).toEqual([]);
    core.clock.advance(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(alarms()).toEqual([WEBHOOK_SILENT_ALARM]);
    expect(api.queries.length).toBeGreaterThan(runsBefore);
    expect(rows().map((r) => r.event_id)).toEqual(['evt_1']);

    const beforeResume = api.queries.length;
    backfill.webhookReceived();
    await vi.advanceTimersByTimeAsync(0);
    expect(alarms()).toEqual([]);
    // Catch-up after the outage.
    expect(api.queries.length).toBe(beforeResume + 1);
    await backfill.stop();
  });

  it.each([
    [
      'does nothing after the grace when the webhook for the payment arrived',
      { polled: 'fk_9', webhookAfterMs: 2_000, webhook: { eventId: 'evt_late', objectId: 'fk_9' }, catchUpRuns: 0 },
    ],
    [
      'catches up without an alarm when other webhooks arrive but the one for this payment was lost',
      { polled: 'fk_dropped', webhookAfterMs: 1_000, webhook: { eventId: 'evt_other', objectId: 'fk_other' }, catchUpRuns: 1 },
    ],
  ] as const)('%s', async (_behaviour, { polled, webhookAfterMs, webhook, catchUpRuns }) => {
    const { api, inbox, backfill, alarms } = setup();
    backfill.start();
    await vi.advanceTimersByTimeAsync(0);
    const runs = api.queries.length;
    backfill.paymentPolled(polled);
    core.clock.advance(webhookAfterMs);
    webhookArrives(inbox, webhook.eventId, webhook.objectId);
    core.clock.advance(GRACE_SEC * 1000);
    await vi.advanceTimersByTimeAsync(GRACE_SEC * 1000);
    expect(alarms()).toEqual([]);
    expect(api.queries.length).toBe(runs + catchUpRuns);
    await backfill.stop();
  });
});
