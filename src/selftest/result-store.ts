import type { Db } from '../store/index.js';
import type { SelftestReport } from './types.js';

/** The `meta` key holding the last report (JSON), for operators and `cmd/selftest` history. */
export const LAST_RESULT_KEY = 'selftest_last';

export function storeSelftestResult(db: Db, report: SelftestReport): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    LAST_RESULT_KEY,
    JSON.stringify(report),
  );
}

/** The last stored report, or null when none was stored (or it cannot be read). */
export function lastSelftestResult(db: Db): SelftestReport | null {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(LAST_RESULT_KEY) as { value: string } | undefined;
  if (!row) return null;
  try {
    return JSON.parse(row.value) as SelftestReport;
  } catch {
    return null;
  }
}
