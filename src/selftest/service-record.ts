import { existsSync } from 'node:fs';
import { openDatabase, serviceRecordIn, type Db, type ServiceRecord } from '../store/index.js';
import { embeddedInstance } from '../mqtt/index.js';

/** The running service's listeners, and the port of its embedded broker when it started one. */
export type RunningService = ServiceRecord & { brokerPort: number | null };

/** Whether a process with this id exists (EPERM: it does, under another user, as the service does). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The record of the service whose process still runs on this database, read without writing (the
 * file is not created). Null when there is no database, no record, or its process has ended.
 */
export function runningServiceOf(databasePath: string): RunningService | null {
  if (databasePath === ':memory:' || !existsSync(databasePath)) return null;
  let db: Db | null = null;
  try {
    db = openDatabase(databasePath, { readonly: true });
    const record = serviceRecordIn(db);
    if (!record || !processAlive(record.pid)) return null;
    return { ...record, brokerPort: embeddedInstance(db)?.port ?? null };
  } catch {
    return null;
  } finally {
    db?.close();
  }
}
