import type { Outbox, OutboxRow } from '../outbox/index.js';
import type { Logger } from '../util/logger.js';
import type { Topics } from './topics.js';

/** One live connection, as the publisher needs it. */
export interface PublishTransport {
  /** Sends with QoS 1; `done` fires on PUBACK, or with an error. */
  publish(topic: string, payload: string, retain: boolean, done: (err?: Error) => void): void;
}

export interface OutboxPublisher {
  /** A new connection: start again from the oldest unacknowledged row. */
  attach(transport: PublishTransport): void;
  /** The connection is gone: whatever was in flight is unknown and is sent again on the next attach. */
  detach(): void;
  /** Hands the next rows to the transport, up to the in-flight window. Cheap when there is nothing. */
  pump(): void;
  /** Drops the oldest events past the bound; returns how many. */
  prune(): number;
  inflight(): number;
}

/**
 * Publishes the outbox in `seq` order with QoS 1 and deletes a row only on its PUBACK.
 *
 * Ordering: within one connection rows go out in seq order over one TCP stream; a lost connection
 * forgets the in-flight window (late callbacks of that connection are ignored) and the next
 * connection starts again from the oldest row still in the table. So nothing is skipped and nothing
 * overtakes; a row whose PUBACK was lost with the connection is sent twice (consumers dedupe by id).
 */
export function createOutboxPublisher(
  deps: { outbox: Outbox; logger: Logger; topics: Topics },
  settings: { maxInflight: number; maxRows: number },
): OutboxPublisher {
  const { outbox, logger, topics } = deps;
  let transport: PublishTransport | null = null;
  let generation = 0;
  let inflight = 0;
  /** Highest seq handed to the current connection. */
  let cursor = 0;
  /** A publish failed on a live connection: start again from the oldest row once the window drains. */
  let rewind = false;

  function settle(gen: number, row: OutboxRow, err?: Error): void {
    if (gen !== generation) return;
    inflight -= 1;
    if (err) {
      logger.warn({ err, seq: row.seq }, 'outbox publish failed; will resend');
      rewind = true;
    } else {
      try {
        outbox.acknowledge(row.seq);
      } catch (ackErr) {
        // The row stays and is sent again after the next reconnect: a duplicate, never a loss.
        logger.error({ err: ackErr, seq: row.seq }, 'could not delete an acknowledged outbox row');
      }
    }
    pump();
  }

  let pumping = false;
  let again = false;

  // Re-entrant calls (a callback that fires synchronously) only ask for one more pass.
  function pump(): void {
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    try {
      do {
        again = false;
        pumpOnce();
      } while (again);
    } catch (err) {
      logger.error({ err }, 'outbox publisher pass failed; the next poll retries');
    } finally {
      pumping = false;
    }
  }

  function pumpOnce(): void {
    if (!transport) return;
    if (rewind) {
      if (inflight > 0) return;
      rewind = false;
      cursor = 0;
    }
    const budget = settings.maxInflight - inflight;
    if (budget <= 0) return;
    // The in-flight rows are still at the head of the table: read only the rows after the last one
    // sent (the pump runs after every PUBACK, a few times per order; re-reading the in-flight rows
    // each time was most of the outbox's reads and garbage).
    const rows = outbox.pending(budget, cursor);
    const gen = generation;
    const sender = transport;
    for (const row of rows) {
      cursor = row.seq;
      const topic = topics.relative(row.topic);
      if (!validTopic(topic)) {
        // A row the broker would answer by dropping the connection would block the queue forever.
        logger.error({ seq: row.seq, topic: row.topic }, 'outbox row has an invalid topic; dropped');
        outbox.acknowledge(row.seq);
        outbox.count('outbox_rejected');
        continue;
      }
      inflight += 1;
      sender.publish(topic, wirePayload(row), row.retain === 1, (err) => settle(gen, row, err));
      if (transport !== sender || rewind) return;
    }
  }

  return {
    attach(next) {
      generation += 1;
      transport = next;
      inflight = 0;
      cursor = 0;
      rewind = false;
      pump();
    },
    detach() {
      generation += 1;
      transport = null;
      inflight = 0;
    },
    pump,
    prune() {
      const dropped = outbox.prune(settings.maxRows);
      if (dropped > 0) logger.warn({ dropped, maxRows: settings.maxRows }, 'outbox full: dropped the oldest events');
      return dropped;
    },
    inflight: () => inflight,
  };
}

/** Events carry their seq so consumers can order and spot gaps; alarm payloads go out as written. */
function wirePayload(row: OutboxRow): string {
  if (row.kind !== 'event') return row.payload;
  try {
    const body = JSON.parse(row.payload) as Record<string, unknown>;
    return JSON.stringify({ seq: row.seq, ...body });
  } catch {
    return row.payload;
  }
}

function validTopic(topic: string): boolean {
  return topic.length > 0 && Buffer.byteLength(topic) <= 65_535 && !/[#+\u0000]/.test(topic);
}
