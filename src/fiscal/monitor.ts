import { inTransaction, prepared, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import type { FiscalRegister, RegisterStatus } from './types.js';
import type { ReceiptBook } from './receipts.js';

export interface FiscalMonitorSettings {
  alarmUnreachableAfterMin: number;
  alarmWaitingAfterMin: number;
  alarmUnknownAfterMin: number;
  lotteryLowDays: number;
  /** 0: never stop sales. */
  stopSalesAfterHours: number;
  /** How often the register's status (lottery numbers left) is asked. */
  statusEveryMs?: number;
  /** A register that works offline (Kazakhstan) stops by law after this many hours [72]. */
  offlineHoursLimit?: number;
}

/** What the screen, telemetry, /metrics and the selftest read of the fiscal path. */
export interface FiscalSnapshot {
  register: string;
  reachable: boolean;
  /** Receipts owed (queued, being sent, unknown). */
  pending: number;
  unknown: number;
  /** Age of the oldest receipt owed, in seconds; 0 when none. */
  oldestAgeSec: number;
  lotteryLeft: number | null;
  salesPerDay: number;
  /** Why sales are stopped for receipts, or null. */
  salesStopped: string | null;
  lastError: string | null;
}

export const FISCAL_ALARMS = {
  unreachable: 'fiscal_register_unreachable',
  waiting: 'fiscal_receipts_waiting',
  lotteryLow: 'fiscal_lottery_low',
  offline: 'fiscal_register_offline',
  blocked: 'fiscal_register_blocked',
  unknown: (orderId: number) => `receipt_unknown/${orderId}`,
} as const;

export interface FiscalMonitor {
  /** Looks at the queue and the register and opens or clears the alarms; stops or resumes sales. */
  check(): Promise<void>;
  snapshot(): FiscalSnapshot;
}

const MIN = 60_000;

/**
 * The operator's view of the fiscal path: alarms through the outbox (each raised once, cleared when
 * its cause ends), the stop of sales after `stopSalesAfterHours`, and the figures of the snapshot.
 */
export function createFiscalMonitor(
  deps: {
    db: Db;
    clock: Clock;
    logger: Logger;
    outbox: Outbox;
    register: FiscalRegister;
    book: ReceiptBook;
    worker: {
      unreachableSince(): number | null;
      blockedSince(): number | null;
      lastAnsweredAt(): number | null;
      lastError(): string | null;
      heard(): void;
    };
    /** Stops (detail) or resumes (null) new orders: the device's availability. */
    stopSales?: (detail: string | null) => void;
  },
  settings: FiscalMonitorSettings,
): FiscalMonitor {
  const { db, clock, outbox, register, book, worker } = deps;
  const log = deps.logger.child({ module: 'fiscal' });
  let status: RegisterStatus | null = null;
  let statusAt = -Infinity;
  let stopped: string | null = null;

  /** Raised once (an open alarm is not published again), cleared when the cause is gone. */
  function alarm(name: string, on: boolean, message: string, detail: Record<string, unknown>): void {
    if (on && !outbox.isAlarmOpen(name)) outbox.raiseAlarm(name, 'warning', message, detail);
    if (!on) outbox.clearAlarm(name);
  }

  /** Since when the status said unreachable (reset when it says reachable). */
  let statusDownSince: number | null = null;

  /** How long the register has not answered: the worker's calls, else the status when nothing was sent since. */
  function unreachableFor(now: number): number {
    const since = worker.unreachableSince();
    if (since !== null) return now - since;
    const answered = worker.lastAnsweredAt();
    if (statusDownSince === null || (answered !== null && answered >= statusDownSince)) return 0;
    return now - statusDownSince;
  }

  return {
    async check() {
      const now = clock.now();
      if (now - statusAt >= (settings.statusEveryMs ?? 60_000)) {
        status = await register.status().catch((err: unknown) => ({
          reachable: false,
          ready: false,
          lotteryLeft: null,
          lastSentAt: null,
          offlineSince: null,
          detail: String(err),
        }));
        statusAt = now;
        statusDownSince = status.reachable ? null : (statusDownSince ?? now);
        // The register answers its status: a receipt call that failed earlier does not keep it "down".
        if (status.reachable) worker.heard();
      }
      const waiting = book.waiting();
      const oldestAge = waiting.oldestAt === null ? 0 : now - waiting.oldestAt;
      const down = unreachableFor(now);
      const blockedSince = worker.blockedSince();
      const blockedFor = blockedSince === null ? 0 : now - blockedSince;
      // What the register has not taken: a receipt already handed to a person (eBarimt cannot be
      // asked about a lost answer) does not stop sales while the register issues the others.
      const stuckAge = waiting.oldestForRegisterAt === null ? 0 : now - waiting.oldestForRegisterAt;
      const perDay = book.salesPerDay(now, 7);
      const lotteryLeft = status?.lotteryLeft ?? null;
      const lotteryLow = lotteryLeft !== null && (lotteryLeft === 0 || (perDay > 0 && lotteryLeft < perDay * settings.lotteryLowDays));
      const stopAfter = settings.stopSalesAfterHours * 3_600_000;
      const stop =
        stopAfter > 0 && Math.max(stuckAge, down, blockedFor) >= stopAfter
          ? `receipts could not be issued for ${Math.floor(Math.max(stuckAge, down, blockedFor) / 3_600_000)} h (fiscal.stopSalesAfterHours: ${settings.stopSalesAfterHours})`
          : null;
      inTransaction(db, () => {
        alarm(
          FISCAL_ALARMS.unreachable,
          down >= settings.alarmUnreachableAfterMin * MIN,
          'the fiscal register does not answer: receipts wait; check its network and power',
          { since: new Date(now - down).toISOString(), detail: worker.lastError() ?? status?.detail ?? null },
        );
        alarm(
          FISCAL_ALARMS.blocked,
          blockedSince !== null,
          `the fiscal register takes no receipt until a person acts on it: ${worker.lastError() ?? 'see its status'}. Receipts wait and are sent once it takes them`,
          { since: blockedSince === null ? null : new Date(blockedSince).toISOString(), detail: worker.lastError() },
        );
        alarm(FISCAL_ALARMS.waiting, oldestAge >= settings.alarmWaitingAfterMin * MIN, 'fiscal receipts are waiting to be issued', {
          pending: waiting.count,
          unknown: waiting.unknown,
          oldest: waiting.oldestAt === null ? null : new Date(waiting.oldestAt).toISOString(),
        });
        alarm(FISCAL_ALARMS.lotteryLow, lotteryLow, 'the register has few lottery numbers left: ask the tax office for more', {
          lotteryLeft,
          salesPerDay: Math.round(perDay * 10) / 10,
          days: settings.lotteryLowDays,
        });
        const offlineFor = status?.offlineSince == null ? 0 : now - status.offlineSince;
        const limitH = settings.offlineHoursLimit ?? 72;
        alarm(
          FISCAL_ALARMS.offline,
          offlineFor >= settings.alarmUnreachableAfterMin * MIN,
          'the fiscal register works offline (its tax-data operator is not reached): it stops issuing receipts at its offline limit',
          {
            offlineSince: status?.offlineSince == null ? null : new Date(status.offlineSince).toISOString(),
            hoursLeft: Math.max(0, Math.round((limitH * 3_600_000 - offlineFor) / 360_000) / 10),
          },
        );
        for (const row of book.unknownSince(now - settings.alarmUnknownAfterMin * MIN)) {
          book.move(row.id, ['unknown'], { alarmed_at: now });
          outbox.raiseAlarm(
            FISCAL_ALARMS.unknown(row.order_id),
            'critical',
            'a receipt has had no known outcome for too long: it is asked about again, never issued twice; check the register',
            {
              orderId: row.order_id,
              kind: row.kind,
              key: row.key,
              since: new Date(row.claimed_at ?? row.created_at).toISOString(),
              detail: row.last_error,
              settle: `vendgate receipt ${row.order_id} --issued --register-id ID --register-date DATE | --not-issued${row.kind === 'return' ? ' --return' : ''}`,
            },
          );
        }
      });
      if (stop !== stopped) {
        stopped = stop;
        if (stop) log.error({ detail: stop }, 'new orders stopped: receipts cannot be issued');
        else log.info('receipts are issued again: new orders taken');
        deps.stopSales?.(stop);
      }
    },

    snapshot() {
      const now = clock.now();
      const waiting = book.waiting();
      return {
        register: register.name,
        reachable: unreachableFor(now) === 0,
        pending: waiting.count,
        unknown: waiting.unknown,
        oldestAgeSec: waiting.oldestAt === null ? 0 : Math.round((now - waiting.oldestAt) / 1000),
        lotteryLeft: status?.lotteryLeft ?? null,
        salesPerDay: Math.round(book.salesPerDay(now, 7) * 10) / 10,
        salesStopped: stopped,
        lastError: worker.lastError(),
      };
    },
  };
}
