import type { Outbox } from '../../outbox/index.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { checkDiskAlarm, readSystem, telemetryPayload } from '../telemetry.js';
import type { Topics } from '../topics.js';
import type { DeviceControl, DeviceTelemetry } from '../types.js';
import type { Feature, Link } from './feature.js';

/**
 * `telemetry` every `mqtt.telemetryIntervalSec` and at each connect: the Pi's own readings and the
 * device's (telemetry.ts). Each tick also holds the `disk_low` alarm to the free space it read, also
 * while the broker is away (the alarm is an outbox row: `wrote()` lets the pump send it now).
 */
export function createTelemetry(
  deps: {
    control: DeviceControl;
    outbox: Outbox;
    clock: Clock;
    logger: Logger;
    topics: Topics;
    deviceId: string;
    /** The database file (its file system's free space), or null in memory. */
    dbPath: string | null;
    transaction<T>(fn: () => T): T;
    /** Called after the tick wrote to the outbox. */
    wrote(): void;
  },
  settings: { telemetryIntervalSec: number; diskLowFreeMb: number },
): Feature {
  const { control, outbox, logger: log } = deps;
  let link: Link | null = null;
  let timer: NodeJS.Timeout | null = null;
  let running = false;
  let stopped = false;

  async function tick(): Promise<void> {
    if (running || stopped) return;
    running = true;
    try {
      const system = await readSystem({ dbPath: deps.dbPath });
      if (stopped) return;
      const threshold = settings.diskLowFreeMb * 1024 * 1024;
      if (checkDiskAlarm({ outbox, logger: log, transaction: deps.transaction }, system.disk, threshold)) deps.wrote();
      const connectedSince = link?.connectedSince() ?? null;
      if (!link || connectedSince === null) return;
      let app: Partial<DeviceTelemetry> = {};
      try {
        app = control.telemetry();
      } catch (err) {
        log.warn({ err }, 'the app could not provide telemetry');
      }
      const payload = telemetryPayload({ deviceId: deps.deviceId, now: deps.clock.now(), outbox, system, connectedSince, app });
      link.publish(deps.topics.telemetry, JSON.stringify(payload), false);
    } catch (err) {
      log.warn({ err }, 'telemetry failed');
    } finally {
      running = false;
    }
  }

  return {
    start(next) {
      link = next;
      timer = setInterval(() => void tick(), settings.telemetryIntervalSec * 1000);
      timer.unref();
    },
    connected: () => void tick(),
    stop() {
      stopped = true;
      if (timer) clearInterval(timer);
    },
  };
}
