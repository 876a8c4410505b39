import type { Logger } from '../util/index.js';
import type { FaultConfig, SimulatorRecords } from './types.js';
import type { Random } from './random.js';

/** One event as it goes on the wire. */
export interface OutgoingEvent {
  /** Recorded id: the Gerege `evt_…`, or the QutPay inbox key `<invoice.id>:<status>`. */
  eventId: string;
  type: string;
  objectId: string;
  /** The exact bytes POSTed, and what the signature covers. */
  body: string;
  /** Where this event goes, when the provider takes the URL per object (QPay's `callback_url`); default the simulator's webhook URL. */
  url?: string;
}

export interface DeliveryDeps {
  url: string | null;
  /** Headers of one attempt; signatures are made per attempt, with the attempt's time. */
  headersFor(event: OutgoingEvent, nowMs: number): Record<string, string>;
  maxAttempts: number;
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  reorderMaxHoldMs: number;
  clock: { now(): number };
  random: Random;
  faults(): FaultConfig;
  records: SimulatorRecords['deliveries'];
  logger: Logger;
}

export interface WebhookDelivery {
  enqueue(event: OutgoingEvent): void;
  /** Cancels every pending and scheduled attempt. Safe twice. */
  stop(): void;
  waitIdle(timeoutMs: number): Promise<void>;
}

interface Job {
  event: OutgoingEvent;
  stale?: boolean;
  duplicate?: boolean;
  /** An older event of the same object to send again once this one is done (lateStaleEvent). */
  staleAfter?: OutgoingEvent;
  /** Jobs held back by reorderWebhooks go out right after this job's first attempt. */
  releasesHeld?: boolean;
}

/**
 * At-least-once webhook delivery. First attempts go out one at a time in creation order, so that
 * without faults the receiver sees events in order and a run is reproducible; retries run on their
 * own schedule beside the queue, as a provider's would.
 */
export function createWebhookDelivery(deps: DeliveryDeps): WebhookDelivery {
  const queue: Job[] = [];
  const history = new Map<string, OutgoingEvent[]>();
  const timers = new Set<NodeJS.Timeout>();
  const controllers = new Set<AbortController>();
  const idleWaiters = new Set<() => void>();
  let held: Job[] | null = null;
  let holdTimer: NodeJS.Timeout | null = null;
  let active = 0;
  let pumping = false;
  let stopped = false;

  function later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  }

  function wait(ms: number): Promise<void> {
    return new Promise((resolve) => later(ms, resolve));
  }

  function record(job: Job, attempt: number, at: number, status: number | 'error' | 'dropped'): void {
    deps.records.push({
      eventId: job.event.eventId,
      type: job.event.type,
      objectId: job.event.objectId,
      attempt,
      at,
      status,
      ...(job.stale ? { stale: true } : {}),
      ...(job.duplicate ? { duplicate: true } : {}),
    });
  }

  function settle(): void {
    active -= 1;
    if (active === 0) for (const resolve of [...idleWaiters]) resolve();
  }

  async function attemptOnce(job: Job, attempt: number): Promise<boolean> {
    const at = deps.clock.now();
    if (deps.faults().webhookOutage) {
      record(job, attempt, at, 'error');
      return false;
    }
    const controller = new AbortController();
    controllers.add(controller);
    const timer = setTimeout(() => controller.abort(), deps.timeoutMs);
    try {
      const response = await fetch(job.event.url ?? deps.url!, {
        method: 'POST',
        headers: deps.headersFor(job.event, at),
        body: job.event.body,
        signal: controller.signal,
      });
      await response.arrayBuffer().catch(() => undefined);
      if (stopped) return false;
      record(job, attempt, at, response.status);
      deps.logger.debug({ eventId: job.event.eventId, attempt, status: response.status }, 'webhook attempt answered');
      return response.status >= 200 && response.status < 300;
    } catch (err) {
      if (stopped) return false;
      record(job, attempt, at, 'error');
      deps.logger.debug({ eventId: job.event.eventId, attempt, err }, 'webhook attempt failed');
      return false;
    } finally {
      clearTimeout(timer);
      controllers.delete(controller);
    }
  }

  function afterAttempt(job: Job, attempt: number, delivered: boolean): void {
    if (stopped) return;
    if (delivered || attempt >= deps.maxAttempts) {
      if (!delivered) deps.logger.debug({ eventId: job.event.eventId, attempts: attempt }, 'webhook given up');
      if (job.staleAfter) {
        active += 1;
        queue.push({ event: job.staleAfter, stale: true });
        void pump();
      }
      settle();
      return;
    }
    const delays = deps.retryDelaysMs;
    const delay = delays.length === 0 ? 1000 : delays[Math.min(attempt - 1, delays.length - 1)]!;
    later(delay, () => {
      void attemptOnce(job, attempt + 1).then((ok) => afterAttempt(job, attempt + 1, ok));
    });
  }

  function releaseHeld(): void {
    if (holdTimer) {
      clearTimeout(holdTimer);
      timers.delete(holdTimer);
      holdTimer = null;
    }
    if (!held) return;
    queue.unshift(...held);
    held = null;
    void pump();
  }

  async function pump(): Promise<void> {
    if (pumping) return;
    pumping = true;
    try {
      while (queue.length > 0 && !stopped) {
        const job = queue.shift()!;
        const delayMs = deps.faults().delayWebhookMs;
        if (delayMs > 0) await wait(delayMs);
        if (stopped) return;
        const delivered = await attemptOnce(job, 1);
        if (job.releasesHeld) releaseHeld();
        afterAttempt(job, 1, delivered);
      }
    } finally {
      pumping = false;
    }
  }

  return {
    enqueue(event) {
      const earlier = history.get(event.objectId) ?? [];
      history.set(event.objectId, [...earlier, event]);
      if (!(event.url ?? deps.url) || stopped) return;
      const faults = deps.faults();
      const { random } = deps;
      // Drawn in a fixed order, every time, so one seed gives one sequence of decisions.
      const drop = random.chance(faults.dropWebhook);
      const duplicate = random.chance(faults.duplicateWebhook);
      const stale = random.chance(faults.lateStaleEvent) && earlier.length > 0 ? earlier[random.int(earlier.length)] : undefined;
      const reorder = random.chance(faults.reorderWebhooks);
      if (drop) {
        record({ event }, 0, deps.clock.now(), 'dropped');
        return;
      }
      const jobs: Job[] = [{ event, ...(stale ? { staleAfter: stale } : {}) }];
      if (duplicate) jobs.push({ event, duplicate: true });
      active += jobs.length;
      if (reorder && held === null) {
        held = jobs;
        holdTimer = setTimeout(() => {
          timers.delete(holdTimer!);
          holdTimer = null;
          releaseHeld();
        }, deps.reorderMaxHoldMs);
        timers.add(holdTimer);
        return;
      }
      if (held !== null) jobs[jobs.length - 1]!.releasesHeld = true;
      queue.push(...jobs);
      void pump();
    },

    stop() {
      if (stopped) return;
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const controller of controllers) controller.abort();
      queue.length = 0;
      held = null;
      active = 0;
      for (const resolve of [...idleWaiters]) resolve();
    },

    waitIdle(timeoutMs) {
      if (active === 0) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          idleWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(() => {
          idleWaiters.delete(done);
          reject(new Error(`webhook deliveries still pending after ${timeoutMs} ms (${active} events in flight or scheduled)`));
        }, timeoutMs);
        idleWaiters.add(done);
      });
    },
  };
}
