import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { DexSettings } from '../settings/index.js';
import type { DexAudit } from './audit.js';

/** The next time (ms) after `now` that the local clock reads `HH:MM`. */
export function nextDailyAt(now: number, hhmm: string): number {
  const [hours, minutes] = hhmm.split(':').map(Number) as [number, number];
  const next = new Date(now);
  next.setHours(hours, minutes, 0, 0);
  if (next.getTime() <= now) next.setDate(next.getDate() + 1);
  return next.getTime();
}

/**
 * Scheduled audit reads (`dex.readEverySec`, `dex.dailyAt`): plain reads, published on the `dex`
 * topic through the outbox. A read that fails (a database behind its last read, a full card) is
 * logged and tried at the next time; it never stops the service.
 */
export function startDexSchedule(deps: { audit: DexAudit; clock: Clock; logger: Logger }, settings: DexSettings): { stop(): void } {
  const log = deps.logger.child({ module: 'dex' });
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;

  function take(why: string): void {
    try {
      const { header } = deps.audit.read('read', `schedule:${why}`);
      log.info({ read: header.read, paid: header.paid.init }, 'audit read taken');
    } catch (err) {
      log.error({ err }, 'scheduled audit read failed; trying again at the next time');
    }
  }

  function every(ms: number): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (stopped) return;
      take('every');
      every(ms);
    }, ms);
    timer.unref();
    timers.add(timer);
  }

  function daily(): void {
    const delay = Math.max(1_000, nextDailyAt(deps.clock.now(), settings.dailyAt) - deps.clock.now());
    // setTimeout holds at most ~24.8 days; a day is well within it.
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (stopped) return;
      take('daily');
      daily();
    }, delay);
    timer.unref();
    timers.add(timer);
  }

  if (settings.readEverySec > 0) every(settings.readEverySec * 1_000);
  if (settings.dailyAt !== '') daily();
  return {
    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
