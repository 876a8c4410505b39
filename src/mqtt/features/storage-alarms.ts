import { STORAGE_ALARMS, type StorageFault, type StorageHealth } from '../../store/index.js';
import type { TopicPayloads } from '../topic-payloads.js';
import type { Topics } from '../topics.js';
import type { Feature, Link } from './feature.js';

/**
 * The card's alarm (`storage_full`, `storage_readonly`, `storage_io_error`) straight onto the broker,
 * retained, on every change and every connect: no outbox row, the database may not take one. The
 * outbox's own row, written once the card allows (device/storage.ts), publishes the same on the same topic.
 */
export function createStorageAlarms(deps: {
  storage: Pick<StorageHealth, 'fault' | 'onChange' | 'describe'> | undefined;
  topics: Topics;
  deviceId: string;
}): Feature {
  const { storage, topics } = deps;
  let link: Link | null = null;

  function publish(fault: StorageFault | null, previous: StorageFault | null): void {
    if (!link) return;
    if (previous && previous.kind !== fault?.kind) link.publish(topics.relative(`alarms/${STORAGE_ALARMS[previous.kind]}`), '', true);
    if (!fault) return;
    const name = STORAGE_ALARMS[fault.kind];
    const payload: TopicPayloads['alarm'] = {
      name,
      severity: 'critical',
      message: storage?.describe() ?? `storage fault on ${fault.path}`,
      since: new Date(fault.since).toISOString(),
      deviceId: deps.deviceId,
      path: fault.path,
      freeBytes: fault.freeBytes,
      code: fault.code,
    };
    link.publish(topics.relative(`alarms/${name}`), JSON.stringify(payload), true);
  }

  return {
    start(next) {
      link = next;
      storage?.onChange((fault, previous) => publish(fault, previous));
    },
    connected() {
      const fault = storage?.fault() ?? null;
      if (fault) publish(fault, null);
    },
    stop() {},
  };
}
