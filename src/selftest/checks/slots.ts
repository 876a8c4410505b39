import type { Db } from '../../store/index.js';
import type { CheckResult } from '../types.js';
import { pass, warn } from '../helpers.js';

/**
 * The `slots` line: slots out of sale because they jammed, and sold-out slots. WARN, never FAIL:
 * the other slots still sell, and an update must not roll back because a spiral is stuck.
 */
export function checkSlots(db: Db | null): CheckResult[] {
  if (!db) return [];
  const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'slot_state'").get();
  if (!hasTable) return [pass('slots', 'no slot state yet (database not migrated)')];
  const jammed = db
    .prepare(
      'SELECT slot, consecutive_failures AS failures, jam_reason AS reason FROM slot_state WHERE jammed_at IS NOT NULL ORDER BY slot',
    )
    .all() as { slot: string; failures: number; reason: string | null }[];
  const soldOut = (db.prepare('SELECT slot FROM slot_state WHERE stock = 0 ORDER BY slot').all() as { slot: string }[]).map((r) => r.slot);
  const results: CheckResult[] = [];
  results.push(
    jammed.length === 0
      ? pass('slots.jammed', 'no slot out of sale')
      : warn(
          'slots.jammed',
          `out of sale after failed vends: ${jammed.map((j) => `${j.slot} (${j.failures} failures${j.reason ? `, last: ${j.reason}` : ''})`).join('; ')}`,
          `fix the slot, then: vendgate clear-jam ${jammed[0]!.slot}  (or MQTT cmd/clear_jam {"slot":"${jammed[0]!.slot}"})`,
        ),
  );
  results.push(
    soldOut.length === 0
      ? pass('slots.stock', 'no counted slot is empty')
      : warn('slots.stock', `sold out: ${soldOut.join(', ')}`, `fill it, then: vendgate refill ${soldOut[0]} <count>`),
  );
  return results;
}
