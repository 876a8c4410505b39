import type { Settings } from '../settings/index.js';
import type { Outbox } from '../outbox/index.js';
import type { Db, StorageHealth } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';

export type MqttSettings = Readonly<Settings>['mqtt'];

/** What the published `state` topic carries. */
export interface DeviceStateSummary {
  mode: 'vending' | 'turnstile';
  /** idle | awaiting_payment | vending | out_of_service | offline | … (the app's screen phase). */
  phase: string;
  orderId: number | null;
  reference: string | null;
  /** ISO time the device entered this phase. */
  since: string;
  /** Why the device is out of service or offline, when it is. */
  reason?: string | null;
}

/** The device as MQTT sees it. Implemented by the app; every method may be called from a command. */
export interface DeviceControl {
  state(): DeviceStateSummary;
  /** `cmd/out_of_service`: stop (or resume) taking orders. */
  setOutOfService(on: boolean, reason: string): void;
  /** `cmd/resolve`: settles a vend_uncertain order. Throws VendgateError (.code, .message). */
  resolve(orderId: number, vended: boolean): Promise<unknown>;
  /** `cmd/refund`: refunds a paid order. Throws VendgateError. */
  refund(orderId: number): Promise<unknown>;
  /** `cmd/test_vend`: one test actuation, no money. Only when `mqtt.allowRemoteVend` is true. */
  testVend(slot: string | null): Promise<unknown>;
  runSelftest(): Promise<{ ok: boolean; report: unknown }>;
  /** Counters, last webhook/poll times, uptime… merged into every telemetry message. */
  telemetry(): Record<string, unknown>;
  /** Called on every change that may alter state(); MQTT publishes only when it really changed. */
  onStateChange(listener: () => void): void;
  /** Catalog, stock and jams (src/catalog/). Absent: the catalog commands answer that this device has none. */
  catalog?: CatalogControl;
}

/** `cmd/catalog`, `cmd/catalog_rollback`, `cmd/refill`, `cmd/clear_jam`. Each throws VendgateError. */
export interface CatalogControl {
  /** Validates the whole document (every problem in the error, nothing applied) and applies it. */
  apply(document: unknown): unknown;
  rollback(): unknown;
  refill(slot: string, count: number): unknown;
  clearJam(slot: string): unknown;
  /** Slots of the catalog in use (Home Assistant gets a stock sensor per slot). */
  slots(): string[];
}

export interface MqttDeps {
  outbox: Outbox;
  clock: Clock;
  logger: Logger;
  deviceId: string;
  control: DeviceControl;
  /**
   * The database the outbox lives in. Optional: with it the disk_low alarm is raised in a
   * transaction and telemetry reports the free space of its file system.
   */
  db?: Db;
  /**
   * The card beneath the database. Its alarm (`storage_full`, `storage_readonly`,
   * `storage_io_error`) is published directly, retained, on every change and connect: the outbox
   * is a table in the database that cannot take the row.
   */
  storage?: Pick<StorageHealth, 'fault' | 'onChange' | 'describe'>;
}

export interface Mqtt {
  /** Connects in the background; never waits for (or fails because of) the broker. */
  start(): Promise<void>;
  /** Publishes `offline`, disconnects, closes the embedded broker. Safe to call twice. */
  stop(): Promise<void>;
  /** Call after a transaction that wrote outbox rows: publishes them now rather than at the next poll. */
  kick(): void;
  connected(): boolean;
  /** Publishes a selftest report, retained, on `selftest`. */
  publishSelftest(report: unknown): void;
}
