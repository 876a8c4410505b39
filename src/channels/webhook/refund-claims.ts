/**
 * A refund an event body reports is a claim, not a fact: the body is signed with the webhook secret,
 * which every relay replica holds, and a Gerege intent does not say it was refunded (docs/providers.md),
 * so a GET cannot contradict it. The claim counts only once the provider confirms it to the device's
 * own credentials: its Events API, read with the device's token, lists the same event id with the
 * same refund (id, amount, payment intent). An event read from the Events API needs no confirmation.
 *
 * Until then the invoice's readings wait (`withRefundEvidence` answers "read again"), so a vend or a
 * refund is decided on confirmed facts only. A claim the provider contradicts, or never lists after
 * `CONFIRM_ATTEMPTS` reads, raises `forged_event` and stops nothing: the order goes on as the
 * provider's own answers say.
 */
import { inTransaction, prepared, type Db } from '../../store/index.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import type { Outbox } from '../../outbox/index.js';
import type { PaymentProvider } from '../../payments/index.js';
import { raiseForgedEvent } from '../../ledger/index.js';
import type { InboxRow, WebhookInbox } from './inbox.js';

/** Reads of the Events API before an unlisted claim is called unconfirmed (the worker's backoff apart). */
export const CONFIRM_ATTEMPTS = 5;
/** Pages of the Events API one confirmation reads at most (100 events each). */
const MAX_PAGES = 20;
/** Where the read starts before the claimed creation time: the provider's clock and ours differ. */
const READ_BEFORE_MS = 5 * 60_000;

export type ClaimVerdict =
  | { kind: 'confirmed' }
  /** The provider lists this event id with other facts: the body lied. */
  | { kind: 'contradicted'; provider: Record<string, unknown> }
  /** Not (yet) listed. */
  | { kind: 'not_listed' };

/** Whether a row is a refund claim still waiting for the provider's word. */
export function isUnconfirmedClaim(row: Pick<InboxRow, 'refund_id' | 'source' | 'refund_confirmed_at'>): boolean {
  return row.refund_id !== null && row.source === 'webhook' && row.refund_confirmed_at === null;
}

/** Looks the claimed event up in the provider's Events API, read with the device's own credentials. */
export async function checkRefundClaim(provider: Pick<PaymentProvider, 'listEvents'>, row: InboxRow): Promise<ClaimVerdict> {
  if (!provider.listEvents) return { kind: 'not_listed' };
  const from = (row.event_created_at ?? row.received_at) - READ_BEFORE_MS;
  let startingAfter: string | undefined;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const answer = await provider.listEvents({
      createdAfterSec: Math.max(0, Math.floor(from / 1000)),
      ...(startingAfter ? { startingAfter } : {}),
    });
    for (const { event } of answer.events) {
      if (event.eventId !== row.event_id) continue;
      const same = event.refund?.id === row.refund_id && event.refund?.amount === row.refund_amount && event.objectId === row.object_id;
      return same
        ? { kind: 'confirmed' }
        : {
            kind: 'contradicted',
            provider: {
              type: event.type,
              invoiceId: event.objectId,
              refundId: event.refund?.id ?? null,
              amount: event.refund?.amount ?? null,
            },
          };
    }
    const last = answer.events[answer.events.length - 1];
    if (!answer.hasMore || !last) break;
    startingAfter = last.event.eventId;
  }
  return { kind: 'not_listed' };
}

export function markClaimConfirmed(db: Db, eventId: string, now: number): void {
  prepared(db, 'UPDATE webhook_events SET refund_confirmed_at = ? WHERE event_id = ? AND refund_confirmed_at IS NULL').run(now, eventId);
}

/** Whether a refund claim about this invoice still waits for the provider's word (its readings wait meanwhile). */
export function refundClaimPendingIn(db: Db): (invoiceId: string) => boolean {
  return (invoiceId) =>
    prepared(
      db,
      `SELECT 1 FROM webhook_events
        WHERE object_id = ? AND refund_id IS NOT NULL AND source = 'webhook' AND refund_confirmed_at IS NULL AND processed_at IS NULL
        LIMIT 1`,
    ).get(invoiceId) !== undefined;
}

/**
 * The worker's step for an unconfirmed claim: `confirmed` (the row goes on to its GET), `retry` (not
 * listed yet, or the Events API could not be read: the worker backs off), or `forged` — contradicted,
 * or never listed after `CONFIRM_ATTEMPTS` reads: `forged_event`, the row processed, nothing counted.
 */
export async function settleRefundClaim(
  deps: {
    db: Db;
    clock: Clock;
    outbox: Outbox;
    provider: Pick<PaymentProvider, 'listEvents'>;
    inbox: Pick<WebhookInbox, 'markProcessed'>;
    log: Logger;
  },
  row: InboxRow,
): Promise<{ kind: 'confirmed' } | { kind: 'retry'; error: unknown } | { kind: 'forged' }> {
  const { db, clock, log } = deps;
  let verdict: ClaimVerdict;
  try {
    verdict = await checkRefundClaim(deps.provider, row);
  } catch (error) {
    return { kind: 'retry', error };
  }
  if (verdict.kind === 'confirmed') {
    markClaimConfirmed(db, row.event_id, clock.now());
    log.info({ eventId: row.event_id, invoiceId: row.object_id, refundId: row.refund_id }, 'refund claim confirmed by the Events API');
    return { kind: 'confirmed' };
  }
  if (verdict.kind === 'not_listed' && row.attempts + 1 < CONFIRM_ATTEMPTS)
    return { kind: 'retry', error: new Error('the refund this event reports is not in the Events API (yet): read again') };
  const what =
    verdict.kind === 'contradicted'
      ? 'the provider lists this event with other facts than the body'
      : `the provider never listed the refund this event reports (${CONFIRM_ATTEMPTS} reads of its Events API)`;
  inTransaction(db, () => {
    deps.inbox.markProcessed(row.event_id, clock.now(), `refund claim not confirmed: ${what}`);
    raiseForgedEvent(deps.outbox, `forged_event/${row.event_id}`, {
      what: `a refund.succeeded body: ${what}`,
      eventId: row.event_id,
      invoiceId: row.object_id,
      claimed: { refundId: row.refund_id, amount: row.refund_amount },
      ...(verdict.kind === 'contradicted' ? { provider: verdict.provider } : {}),
    });
  });
  log.error({ eventId: row.event_id, invoiceId: row.object_id, what }, 'forged event: refund claim not confirmed; nothing moved');
  return { kind: 'forged' };
}
