import { prepared, type Db } from './open.js';

/**
 * Where the running service really listens, written by the service into its own database once its
 * listeners are up. The selftest beside it reads this, so that a service started with
 * `--local-port`/`--broker-port` (or their variables) is checked at its own ports, not at the
 * file's, where another program may answer.
 */
export interface ServiceRecord {
  pid: number;
  at: string;
  local: string;
  webhook: string;
}

const KEY = 'service_listeners';

/** Written by the service at start, after both listeners answer. */
export function recordRunningService(db: Db, record: ServiceRecord): void {
  prepared(db, 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    KEY,
    JSON.stringify(record),
  );
}

/** The record in an open database, whatever its process is doing. */
export function serviceRecordIn(db: Db): ServiceRecord | null {
  const row = prepared(db, 'SELECT value FROM meta WHERE key = ?').get(KEY) as { value: string } | undefined;
  if (!row) return null;
  try {
    const parsed = JSON.parse(row.value) as Partial<ServiceRecord>;
    if (typeof parsed.pid !== 'number' || typeof parsed.local !== 'string' || typeof parsed.webhook !== 'string') return null;
    return { pid: parsed.pid, at: String(parsed.at ?? ''), local: parsed.local, webhook: parsed.webhook };
  } catch {
    return null;
  }
}
