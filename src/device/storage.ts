import { inTransaction, STORAGE_ALARMS, type Db, type StorageFault, type StorageHealth } from '../store/index.js';
import type { Outbox } from '../outbox/index.js';
import type { Logger } from '../util/logger.js';
import type { Availability } from './availability.js';

/** How often the alarm row is tried again while the card refuses it. */
const ROW_RETRY_MS = 5_000;

export interface StorageAlarmDeps {
  db: Db;
  outbox: Pick<Outbox, 'raiseAlarm' | 'clearAlarm' | 'event'>;
  logger: Logger;
  availability: Pick<Availability, 'set' | 'clear'>;
  storage: Pick<StorageHealth, 'onChange' | 'fault' | 'describe'>;
  /** After the alarm row was written: MQTT publishes the outbox now. */
  notify?: () => void;
}

/**
 * What a storage fault does beyond the money path: the device is out of service (`storage`), and the
 * alarm row is written when the card takes it (at once after the ballast was given back on a full
 * disk; never on a card gone read-only, where MQTT's direct publish is all the operator gets). When
 * the fault clears, the row is cleared and an event says how long it lasted. A fault already in force
 * when this is called is followed at once, as if it had just begun.
 */
export function followStorageFaults(deps: StorageAlarmDeps): { stop(): void } {
  const log = deps.logger.child({ module: 'storage' });
  /** The fault whose alarm row is still to be written. */
  let unwritten: StorageFault | null = null;
  /** The alarm whose row is in the database. */
  let written: string | null = null;
  let timer: NodeJS.Timeout | null = null;

  function writeRow(): void {
    const fault = unwritten;
    if (!fault) return;
    const name = STORAGE_ALARMS[fault.kind];
    try {
      inTransaction(deps.db, () => {
        if (written && written !== name) deps.outbox.clearAlarm(written);
        deps.outbox.raiseAlarm(name, 'critical', deps.storage.describe(), {
          path: fault.path,
          freeBytes: fault.freeBytes,
          code: fault.code,
        });
      });
      written = name;
      unwritten = null;
      deps.notify?.();
    } catch (err) {
      log.warn({ err: { code: (err as { code?: unknown }).code }, alarm: name }, 'the storage alarm row cannot be written yet');
      timer ??= setTimeout(() => {
        timer = null;
        writeRow();
      }, ROW_RETRY_MS);
      timer.unref();
    }
  }

  function follow(fault: StorageFault | null, previous: StorageFault | null): void {
    if (fault) {
      deps.availability.set('storage', deps.storage.describe());
      unwritten = fault;
      writeRow();
      return;
    }
    deps.availability.clear('storage');
    unwritten = null;
    try {
      inTransaction(deps.db, () => {
        if (written) deps.outbox.clearAlarm(written);
        deps.outbox.event('storage.recovered', {
          kind: previous?.kind ?? null,
          since: previous ? new Date(previous.since).toISOString() : null,
        });
      });
      written = null;
      deps.notify?.();
    } catch (err) {
      log.warn({ err }, 'the storage alarm could not be cleared in the database');
    }
  }

  deps.storage.onChange(follow);
  // A fault already in force when this subscribes (a start on a full disk: openStore() reported it
  // before the device existed) is followed the same way: out of service, the alarm row written.
  const inForce = deps.storage.fault();
  if (inForce) follow(inForce, null);

  return {
    stop() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}
