import { cleanupList } from '../helpers/cleanup.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { openDatabase, inTransaction, type Db } from '../../src/store/index.js';
import { createOutbox, type Outbox, type EventType } from '../../src/outbox/index.js';
import { createMqtt, type Mqtt } from '../../src/mqtt/index.js';
import { mqttSchema } from '../../src/settings/sections/mqtt.js';
import { systemClock, type Logger } from '../../src/util/index.js';
import { createFakeDeviceControl, type FakeDeviceControl } from '../fakes/device-control.js';
import { testBroker, uniqueId, type TestBroker } from '../helpers/broker.js';
import { clearRetainedUnder, watch, type Watcher } from './watch.js';
import { commandSettings } from '../helpers/operator.js';
import type { CommandAuthSettings } from '../../src/mqtt/index.js';

const cleanups = cleanupList();

/** Runs `fn` after the test, in reverse order of registration (stop the device before the broker). */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups(fn);
}

/** A temporary directory with a migrated SQLite file in it, removed after the test. */
export function tempDatabase(): { dir: string; path: string; db: Db } {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-mqtt-'));
  const path = join(dir, 'vendgate.db');
  const db = openDatabase(path);
  onCleanup(() => {
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, path, db };
}

/** Log lines as text, to check what was (and was not) logged. */
export function captureLogger(): { logger: Logger; text(): string } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, destination), text: () => chunks.join('') };
}

export interface Device {
  deviceId: string;
  prefix: string;
  base: string;
  db: Db;
  dbPath: string;
  outbox: Outbox;
  control: FakeDeviceControl;
  mqtt: Mqtt;
  /** Writes events in one transaction (as the money path does) and kicks the publisher. */
  write(count: number, type?: EventType): string[];
}

/** A device (real SQLite outbox, fake DeviceControl) talking to `url`, stopped after the test. */
export function createDevice(
  url: string,
  overrides: Record<string, unknown> = {},
  options: { logger?: Logger; start?: boolean; commands?: CommandAuthSettings } = {},
): Device {
  const deviceId = uniqueId('dev');
  const prefix = uniqueId('vgt');
  const { db, path } = tempDatabase();
  const outbox = createOutbox({ db, clock: systemClock, deviceId });
  const control = createFakeDeviceControl();
  const settings = mqttSchema().parse({
    url,
    prefix,
    reconnectMinMs: 100,
    reconnectMaxMs: 500,
    telemetryIntervalSec: 3_600,
    homeAssistantPrefix: `ha-${prefix}`,
    ...overrides,
  });
  const mqtt = createMqtt(
    {
      outbox,
      clock: systemClock,
      logger: options.logger ?? pino({ level: 'silent' }),
      deviceId,
      control,
      db,
      commands: options.commands ?? commandSettings(),
    },
    settings,
  );
  if (url === process.env.MQTT_TEST_URL) {
    onCleanup(async () => {
      await clearRetainedUnder(url, `${prefix}/#`);
      await clearRetainedUnder(url, `ha-${prefix}/#`);
    });
  }
  onCleanup(() => mqtt.stop());
  let n = 0;
  return {
    deviceId,
    prefix,
    base: `${prefix}/${deviceId}`,
    db,
    dbPath: path,
    outbox,
    control,
    mqtt,
    write(count, type = 'order.created') {
      // Rows of the publisher's tests: their order and acknowledgement are under test, not the payload's fields.
      const rows = outbox as unknown as { event(type: EventType, data: object): string };
      const ids = inTransaction(db, () => Array.from({ length: count }, () => rows.event(type, { orderId: ++n })));
      mqtt.kick();
      return ids;
    },
  };
}

export interface EventMessage {
  seq: number;
  id: string;
  type: string;
  orderId?: number;
}

export function parseEvents(messages: { payload: string }[]): EventMessage[] {
  return messages.map((m) => JSON.parse(m.payload) as EventMessage);
}

/** A subscriber closed after the test. */
export async function watching(url: string, filters: string[]): Promise<Watcher> {
  const watcher = await watch(url, filters);
  onCleanup(() => watcher.close());
  return watcher;
}

/** The test broker (shared Mosquitto or a fresh aedes), closed after the test. */
export async function broker(): Promise<TestBroker> {
  const b = await testBroker();
  onCleanup(() => b.close());
  return b;
}
