import type { Db } from '../store/index.js';
import { scheduleClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { PaymentProvider } from '../payments/types.js';
import { ProviderError } from '../payments/types.js';
import { observationOf, type Ledger, type Observation, type ObserveResult } from '../ledger/index.js';
import type { OrderRepository, ProviderHealth } from '../orders/index.js';

export interface PollerSettings {
  intervalMs: number;
  maxBackoffMs: number;
}

export interface PollerDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  provider: PaymentProvider;
  ledger: Ledger;
  health: ProviderHealth;
  orderRepository: Pick<OrderRepository, 'unsettledInvoices'>;
  /** After each reading is observed (the app tells the webhook channel about payments it polled first). */
  onObserved?: (observation: Observation, result: ObserveResult) => void;
  /**
   * True while webhooks cannot be trusted (the clocks disagree beyond the signature tolerance):
   * open invoices are read twice as often, since polling carries the payments meanwhile.
   */
  webhooksUntrusted?: () => boolean;
}

/** Closed invoices are still read for a late payment, but less often than open ones. */
const CLOSED_INTERVAL_FACTOR = 5;
/** While the provider is unreachable and nothing is open, probe it this often so `offline` clears. */
const PROBE_INTERVAL_MS = 15_000;

/** The poller as the app and the device view use it. */
export interface Poller {
  /** Starts the ticks; every unsettled invoice in the database is followed from here on. */
  start(): void;
  /** Reads every unsettled invoice at the next tick (the provider is reachable again after an outage). */
  pollAllNow(): void;
  /** Reads an invoice now (a webhook arrived, a new order was created). */
  pollNow(invoiceId: string): void;
  /**
   * Something may have opened an invoice (the app calls it on every state change): a poller asleep
   * for a whole interval because nothing was open looks at its next short tick instead.
   */
  wake(): void;
  /** Number of invoices being watched. */
  watching(): number;
  /** When an invoice was last read successfully (ms), or null before the first. */
  lastPollAt(): number | null;
  /** No new ticks; resolves when the tick in flight is over. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * The channel that always works. Every invoice this device created is read until the provider gives
 * its final answer (paid, expired, refunded, canceled after its expiry): an open one every
 * `intervalMs`, a closed one less often. Errors back off (Retry-After on 429), never drop an
 * invoice. No unsettled invoice → no provider calls. Everything it needs is in the database, so a
 * restart resumes it.
 */
export function createPoller(deps: PollerDeps, settings: PollerSettings): Poller {
  const { db, clock, provider, ledger, health } = deps;
  const log = deps.logger.child({ module: 'poller' });
  // Due times are on the monotonic clock: a wall clock set back by NTP must not stop the reads for
  // the size of the jump, nor one set forward make every invoice due at once.
  const mono = scheduleClock(clock);
  const openInterval = () => (deps.webhooksUntrusted?.() ? Math.max(tickMs, Math.floor(settings.intervalMs / 2)) : settings.intervalMs);
  const due = new Map<string, { at: number; failures: number }>();
  let timer: NodeJS.Timeout | null = null;
  let ticking: Promise<void> | null = null;
  let lastProbe = -Infinity;
  let lastPollAt: number | null = null;
  let stopped = true;
  let nothingOpen = false;
  /** wake() came during a tick: the next wait is a short tick whatever that tick found. */
  let woken = false;
  const tickMs = Math.max(25, Math.min(250, Math.floor(settings.intervalMs / 4)));

  const orders = deps.orderRepository;

  function openInvoices(): { invoice_id: string; state: string }[] {
    return orders.unsettledInvoices().map((row) => ({
      invoice_id: row.invoice_id,
      state: row.current && row.state === 'awaiting_payment' ? 'awaiting_payment' : 'closed',
    }));
  }

  async function pollOne(invoiceId: string, closed: boolean): Promise<void> {
    const entry = due.get(invoiceId) ?? { at: 0, failures: 0 };
    try {
      const invoice = await provider.getInvoice(invoiceId);
      lastPollAt = clock.now();
      const observation = observationOf(invoice, 'poll');
      const result = ledger.observe(observation);
      deps.onObserved?.(observation, result);
      due.set(invoiceId, { at: mono() + (closed ? settings.intervalMs * CLOSED_INTERVAL_FACTOR : openInterval()), failures: 0 });
    } catch (err) {
      const failures = entry.failures + 1;
      const backoff = Math.min(settings.maxBackoffMs, settings.intervalMs * 2 ** failures);
      const wait =
        err instanceof ProviderError && err.retryAfterMs !== undefined ? Math.max(err.retryAfterMs, settings.intervalMs) : backoff;
      due.set(invoiceId, { at: mono() + wait, failures });
      if (err instanceof ProviderError && err.kind === 'not_found') {
        log.error({ invoiceId }, 'the provider does not know this invoice');
      } else {
        log.warn({ err, invoiceId, failures, waitMs: wait }, 'poll failed; backing off');
      }
    }
  }

  async function tick(): Promise<void> {
    const open = openInvoices();
    nothingOpen = open.length === 0;
    const now = mono();
    const live = new Set(open.map((o) => o.invoice_id));
    for (const id of due.keys()) if (!live.has(id)) due.delete(id);
    for (const { invoice_id: id, state } of open) {
      if (stopped) return;
      const entry = due.get(id);
      if (entry && entry.at > now) continue;
      await pollOne(id, state !== 'awaiting_payment');
    }
    if (open.length === 0 && !health.reachable && now - lastProbe >= PROBE_INTERVAL_MS) {
      lastProbe = now;
      try {
        await provider.checkCredentials();
        log.info('payment provider reachable again');
      } catch {
        // Still down: provider health heard it from the HTTP client.
      }
    }
  }

  function schedule(): void {
    if (stopped) return;
    // An idle device (no invoice open) looks once an interval, not four times: a new invoice's
    // first read waits at most one interval, as every later one does, and an idle Pi stays idle.
    const wait = nothingOpen && !woken ? Math.max(tickMs, settings.intervalMs) : tickMs;
    woken = false;
    timer = setTimeout(() => {
      ticking = tick()
        .catch((err) => log.error({ err }, 'poll tick failed'))
        .finally(() => {
          ticking = null;
          schedule();
        });
    }, wait);
    timer.unref?.();
  }

  return {
    start(): void {
      if (!stopped) return;
      stopped = false;
      schedule();
    },
    /** Reads every unsettled invoice at the next tick (the provider is reachable again after an outage). */
    pollAllNow(): void {
      for (const entry of due.values()) entry.at = 0;
    },
    /** Reads an invoice now (a webhook arrived, a new order was created). */
    pollNow(invoiceId: string): void {
      const entry = due.get(invoiceId);
      if (entry) entry.at = 0;
    },
    wake(): void {
      if (stopped) return;
      // A tick in flight may have looked before the invoice existed: its next wait is a short one.
      if (ticking) {
        woken = true;
        return;
      }
      if (!nothingOpen || !timer) return;
      clearTimeout(timer);
      nothingOpen = false;
      schedule();
    },
    /** Number of invoices being watched. */
    watching(): number {
      return openInvoices().length;
    },
    lastPollAt(): number | null {
      return lastPollAt;
    },
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await ticking;
    },
  };
}
