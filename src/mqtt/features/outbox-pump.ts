import type { Outbox } from '../../outbox/index.js';
import type { Logger } from '../../util/logger.js';
import { createOutboxPublisher } from '../publisher.js';
import type { Topics } from '../topics.js';
import type { Feature } from './feature.js';

/** The outbox table is polled this often as a safety net for a missed kick(). */
const POLL_INTERVAL_MS = 1_000;

export interface OutboxPump extends Feature {
  /** Publishes new rows now rather than at the next poll (after a transaction that wrote some). */
  kick(): void;
  /** Hands the next rows to the connection now, synchronously. */
  pump(): void;
}

/**
 * The outbox onto the broker in `seq` order, each row deleted on its PUBACK (publisher.ts): from the
 * oldest unacknowledged row on every connect, on every kick, and once a second in any case.
 */
export function createOutboxPump(
  deps: { outbox: Outbox; logger: Logger; topics: Topics },
  settings: { maxInflight: number; outboxMaxRows: number },
): OutboxPump {
  const log = deps.logger;
  const publisher = createOutboxPublisher(
    { outbox: deps.outbox, logger: log, topics: deps.topics },
    { maxInflight: settings.maxInflight, maxRows: settings.outboxMaxRows },
  );
  let poll: NodeJS.Timeout | null = null;
  let kickScheduled = false;
  let stopped = false;

  function prune(): void {
    try {
      publisher.prune();
    } catch (err) {
      log.error({ err }, 'outbox prune failed');
    }
  }

  return {
    start() {
      prune();
      poll = setInterval(() => {
        prune();
        publisher.pump();
      }, POLL_INTERVAL_MS);
      poll.unref();
    },
    connected(c) {
      publisher.attach({
        publish: (topic, payload, retain, done) => c.publish(topic, payload, { qos: 1, retain }, (err) => done(err ?? undefined)),
      });
    },
    disconnected: () => publisher.detach(),
    stop() {
      stopped = true;
      if (poll) clearInterval(poll);
    },
    kick() {
      if (kickScheduled || stopped) return;
      kickScheduled = true;
      setImmediate(() => {
        kickScheduled = false;
        publisher.pump();
      });
    },
    pump: () => publisher.pump(),
  };
}
