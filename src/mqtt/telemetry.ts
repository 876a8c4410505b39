import { readFile, statfs } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Outbox } from '../outbox/index.js';
import type { Logger } from '../util/logger.js';
import type { DeviceTelemetry } from './types.js';
import type { TopicPayloads } from './topic-payloads.js';
import { buildInfo } from '../version.js';

export const THERMAL_ZONE_PATH = '/sys/class/thermal/thermal_zone0/temp';
export const DISK_LOW_ALARM = 'disk_low';

export interface SystemReadings {
  memory: { rssBytes: number; heapUsedBytes: number };
  /** Null where the board has no readable thermal zone (containers, most PCs in CI). */
  cpuTempC: number | null;
  disk: { freeBytes: number; totalBytes: number } | null;
  processUptimeSec: number;
}

/** What the Pi itself reports: memory, SoC temperature, free space on the database's file system. */
export async function readSystem(options: { dbPath?: string | null; thermalPath?: string } = {}): Promise<SystemReadings> {
  const memory = process.memoryUsage();
  return {
    memory: { rssBytes: memory.rss, heapUsedBytes: memory.heapUsed },
    cpuTempC: await readTemperature(options.thermalPath ?? THERMAL_ZONE_PATH),
    disk: options.dbPath ? await readDisk(dirname(resolve(options.dbPath))) : null,
    processUptimeSec: Math.round(process.uptime()),
  };
}

// node:fs's callbacks, promisified: node:fs is loaded already, and node:fs/promises would load ten
// more of Node's modules for two reads a minute (src/util/lazy-builtins.ts, docs/benchmarks.md).
const readFileAsync = promisify(readFile);
const statfsAsync = promisify(statfs);

async function readTemperature(path: string): Promise<number | null> {
  try {
    const milli = Number.parseInt(await readFileAsync(path, 'utf8'), 10);
    return Number.isFinite(milli) ? Math.round(milli / 100) / 10 : null;
  } catch {
    return null;
  }
}

async function readDisk(dir: string): Promise<SystemReadings['disk']> {
  try {
    const stats = await statfsAsync(dir);
    // bavail, not bfree: what an unprivileged process (the vendgate user) can still write.
    return { freeBytes: stats.bavail * stats.bsize, totalBytes: stats.blocks * stats.bsize };
  } catch {
    return null;
  }
}

/**
 * The telemetry message: our own readings, then whatever the app provides (its values win where
 * both name the same thing: it knows its counters and uptime best).
 */
export function telemetryPayload(input: {
  deviceId: string;
  now: number;
  outbox: Outbox;
  system: SystemReadings;
  connectedSince: number | null;
  /** The device's part; empty when it could not be read. */
  app: Partial<DeviceTelemetry>;
}): TopicPayloads['telemetry'] {
  const { outbox, system } = input;
  return {
    deviceId: input.deviceId,
    at: new Date(input.now).toISOString(),
    // Which release the device runs: a fleet view finds the devices an update missed.
    ...buildInfo(),
    uptimeSec: system.processUptimeSec,
    counters: outbox.counters(),
    outboxDepth: outbox.depth(),
    openAlarms: outbox.openAlarms().map((alarm) => alarm.name),
    mqttConnectedSince: input.connectedSince === null ? null : new Date(input.connectedSince).toISOString(),
    memory: system.memory,
    cpuTempC: system.cpuTempC,
    disk: system.disk,
    ...input.app,
  };
}

/**
 * Opens disk_low below the threshold and clears it above 110 % of it, so a disk hovering at the
 * line does not flap the alarm every interval. Returns true when it wrote to the outbox.
 */
export function checkDiskAlarm(
  deps: {
    outbox: Outbox;
    logger: Logger;
    transaction: <T>(fn: () => T) => T;
  },
  disk: SystemReadings['disk'],
  thresholdBytes: number,
): boolean {
  if (!disk) return false;
  const { outbox } = deps;
  const open = outbox.openAlarms().some((alarm) => alarm.name === DISK_LOW_ALARM);
  if (!open && disk.freeBytes < thresholdBytes) {
    deps.logger.warn({ freeBytes: disk.freeBytes, thresholdBytes }, 'disk nearly full');
    deps.transaction(() =>
      outbox.raiseAlarm(
        DISK_LOW_ALARM,
        'warning',
        'the disk holding the database is nearly full: free space (old logs, journald) before writes fail',
        { freeBytes: disk.freeBytes, thresholdBytes },
      ),
    );
    return true;
  }
  if (open && disk.freeBytes > thresholdBytes * 1.1) {
    deps.transaction(() => outbox.clearAlarm(DISK_LOW_ALARM));
    return true;
  }
  return false;
}
