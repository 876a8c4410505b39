import type { Settings } from '../../settings/index.js';
import type { Db } from '../../store/index.js';
import type { FiscalRegister } from '../../fiscal/index.js';
import type { CheckResult } from '../types.js';
import { describeError, fail, pass, warn } from '../helpers.js';

/**
 * The `fiscal` lines: the register the settings name answers and is ready, and no receipt waits
 * longer than the alarm setting. A register that does not answer is a WARN (the vends go on and
 * the receipts wait), unless `fiscal.stopSalesAfterHours` makes it stop sales: then a FAIL.
 */
export async function checkFiscal(
  settings: Readonly<Settings>,
  deps: { db: Db | null; now: number; register: FiscalRegister | null },
): Promise<CheckResult[]> {
  const fiscal = settings.fiscal;
  if (fiscal.register === 'none') return [pass('fiscal', 'no fiscal register (fiscal.register: none): no receipts are issued')];
  const results: CheckResult[] = [];
  const stops = fiscal.stopSalesAfterHours > 0;
  const hint = `check the ${fiscal.register} register's network and power (docs/receipts.md, "When the register is down")`;
  if (!deps.register && fiscal.register === 'sandbox') {
    results.push(pass('fiscal.register', 'sandbox register (the demo): it runs inside the service, no tax office'));
  } else if (!deps.register) {
    results.push(fail('fiscal.register', `fiscal.register ${fiscal.register}: not available in this build`, 'see docs/receipts.md'));
  } else {
    try {
      const status = await deps.register.status();
      const lottery = status.lotteryLeft === null ? '' : `; ${status.lotteryLeft} lottery numbers left`;
      if (!status.reachable)
        results.push((stops ? fail : warn)('fiscal.register', `${fiscal.register}: not reachable (${status.detail})`, hint));
      else if (!status.ready)
        results.push(
          fail(
            'fiscal.register',
            `${fiscal.register}: reachable but not ready (${status.detail})`,
            'activate the register for this merchant',
          ),
        );
      else results.push(pass('fiscal.register', `${fiscal.register}: ready (${status.detail})${lottery}`));
    } catch (err) {
      results.push(warn('fiscal.register', `${fiscal.register}: ${describeError(err)}`, hint));
    }
  }
  const hasTable = deps.db?.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'receipts'").get();
  if (!deps.db || !hasTable) return [...results, pass('fiscal.receipts', 'no receipts yet')];
  const row = deps.db
    .prepare(
      "SELECT count(*) AS n, min(created_at) AS oldest, sum(state = 'rejected') AS r FROM receipts WHERE state IN ('queued', 'sending', 'unknown', 'rejected')",
    )
    .get() as { n: number; oldest: number | null; r: number | null };
  const waitingMin = row.oldest === null ? 0 : Math.round((deps.now - row.oldest) / 60_000);
  if (row.r)
    results.push(
      warn(
        'fiscal.receipts',
        `${row.r} receipt(s) refused by the register`,
        'issue them by hand in the register (alarm receipt_rejected/<order>)',
      ),
    );
  else if (row.n > 0 && waitingMin >= fiscal.alarmWaitingAfterMin)
    results.push(warn('fiscal.receipts', `${row.n} receipt(s) waiting, the oldest for ${waitingMin} min`, hint));
  else results.push(pass('fiscal.receipts', row.n ? `${row.n} receipt(s) on their way` : 'every receipt issued'));
  return results;
}
