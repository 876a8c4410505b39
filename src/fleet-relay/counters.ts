/** What the relay counts; logged periodically and at stop, and read by tests. */
export interface RelayCounters {
  received: number;
  /** Bad signature or body: 400, nothing published. */
  refused: number;
  /** Published and acknowledged by the broker: 200. */
  published: number;
  /** For no announced device: 202, counted (it may belong to another system on the account). */
  unrouted: number;
  /** No PUBACK in time, or no broker: 503, the provider retries. */
  notAcknowledged: number;
  /** The refund lookup failed: 503, the provider retries. */
  retryLater: number;
  /** Route announcements dropped for being over the size or prefix bound (the device's route is forgotten). */
  routesDropped: number;
}

export function createCounters(): RelayCounters {
  return { received: 0, refused: 0, published: 0, unrouted: 0, notAcknowledged: 0, retryLater: 0, routesDropped: 0 };
}
