import type { Db } from '../../store/index.js';
import { inTransaction } from '../../store/index.js';
import type { Outbox } from '../../outbox/index.js';
import type { Logger } from '../../util/logger.js';
import { SKEW_WARN_SEC } from './server.js';

export const CLOCK_SKEW_ALARM = 'clock_skew';

/** The clock skew as the rest of the device reads it. */
export interface ClockSkew {
  /** A measurement: this device's clock minus the provider's, in seconds (a verified webhook, an API answer). */
  observe(skewSec: number): void;
  /** The latest measurement in ms (this device minus the provider), 0 before the first. */
  offsetMs(): number;
  /** True while the skew is beyond the signature tolerance: webhooks are refused, polling carries the payments. */
  webhooksUntrusted(): boolean;
}

/**
 * A retained `alarms/clock_skew` while the provider's Date header and this device's clock disagree by
 * more than SKEW_WARN_SEC: signatures start failing at `toleranceSec`, so operators hear of it first.
 * Fed by every verified webhook and by the Date header of every provider API answer (at a
 * skew where no signature holds, only the API answers can say so). Cleared by the first measurement
 * within bounds. Writes only when the state changes; a write the card refuses is tried again at the
 * next measurement.
 */
export function createClockSkewAlarm(
  deps: { db: Db; outbox: Outbox; logger?: Logger },
  settings: { toleranceSec?: number } = {},
): ClockSkew {
  let open = deps.outbox.openAlarms().some((a) => a.name === CLOCK_SKEW_ALARM);
  let latestMs = 0;
  const toleranceSec = settings.toleranceSec ?? 300;
  const log = deps.logger?.child({ module: 'clock' });
  return {
    observe(skewSec: number): void {
      latestMs = skewSec * 1000;
      const skewed = Math.abs(skewSec) > SKEW_WARN_SEC;
      if (skewed === open) return;
      try {
        inTransaction(deps.db, () =>
          skewed
            ? deps.outbox.raiseAlarm(
                CLOCK_SKEW_ALARM,
                'warning',
                Math.abs(skewSec) > toleranceSec
                  ? "this device's clock differs from the payment provider's beyond the webhook tolerance: webhooks are refused, payments arrive by polling; check NTP (timedatectl)"
                  : "this device's clock differs from the payment provider's: check NTP (timedatectl)",
                { skewSec: Math.round(skewSec), toleranceSec, warnAfterSec: SKEW_WARN_SEC },
              )
            : deps.outbox.clearAlarm(CLOCK_SKEW_ALARM),
        );
        open = skewed;
        if (skewed)
          log?.warn({ skewSec: Math.round(skewSec), toleranceSec }, "this device's clock differs from the provider's: clock_skew raised");
        else log?.info({ skewSec: Math.round(skewSec) }, "this device's clock agrees with the provider's again: clock_skew cleared");
      } catch (err) {
        log?.warn({ err }, 'the clock_skew alarm could not be written');
      }
    },
    offsetMs: () => latestMs,
    webhooksUntrusted: () => Math.abs(latestMs) > toleranceSec * 1000,
  };
}
