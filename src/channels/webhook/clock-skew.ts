import type { Db } from '../../store/index.js';
import { inTransaction } from '../../store/index.js';
import type { Outbox } from '../../outbox/index.js';
import { SKEW_WARN_SEC } from './server.js';

export const CLOCK_SKEW_ALARM = 'clock_skew';

/**
 * A retained `alarms/clock_skew` while the provider's Date header and this device's clock disagree by
 * more than SKEW_WARN_SEC: signatures start failing at `toleranceSec`, so operators hear of it first.
 * Cleared by the first delivery within bounds. Writes only when the state changes.
 */
export function createClockSkewAlarm(deps: { db: Db; outbox: Outbox }) {
  let open = deps.outbox.openAlarms().some((a) => a.name === CLOCK_SKEW_ALARM);
  return {
    observe(skewSec: number): void {
      const skewed = Math.abs(skewSec) > SKEW_WARN_SEC;
      if (skewed === open) return;
      open = skewed;
      inTransaction(deps.db, () =>
        skewed
          ? deps.outbox.raiseAlarm(
              CLOCK_SKEW_ALARM,
              'warning',
              "this device's clock differs from the payment provider's: check NTP (timedatectl)",
              { skewSec: Math.round(skewSec) },
            )
          : deps.outbox.clearAlarm(CLOCK_SKEW_ALARM),
      );
    },
  };
}
