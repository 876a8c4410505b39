import type { Clock } from '../../util/clock.js';
import type { Topics } from '../topics.js';
import type { TopicPayloads } from '../topic-payloads.js';
import type { Feature, Link } from './feature.js';

export interface SelftestReports extends Feature {
  /** Publishes a report, retained, on `selftest`: now, or at the next connect if the broker is away. */
  publish(report: unknown): void;
}

/** The last selftest report, retained on `selftest`; kept until the broker acknowledged it. */
export function createSelftestReports(deps: { clock: Clock; topics: Topics }): SelftestReports {
  let link: Link | null = null;
  let waiting: string | null = null;

  function publishWaiting(): void {
    const payload = waiting;
    if (payload === null || !link) return;
    link.publish(deps.topics.selftest, payload, true, (err) => {
      if (!err && waiting === payload) waiting = null;
    });
  }

  return {
    start(next) {
      link = next;
    },
    connected: publishWaiting,
    stop() {},
    publish(report) {
      const message: TopicPayloads['selftest'] = { at: new Date(deps.clock.now()).toISOString(), report };
      waiting = JSON.stringify(message);
      publishWaiting();
    },
  };
}
