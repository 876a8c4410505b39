import type { Settings } from '../settings/index.js';
import type { Outbox } from '../outbox/index.js';
import type { Db, StorageHealth } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { CommandAuthSettings } from './commands/envelope.js';
import type { UnverifiedSummary } from './commands/tally.js';
import type { CommandResults } from './command-results.js';
import type { z } from 'zod';
import type { DEVICE_STATE, DEVICE_TELEMETRY } from './topic-payloads.js';

export type MqttSettings = Readonly<Settings>['mqtt'];

/** What `control.state()` gives: the device state (topic-payloads.ts; the `state` topic adds `dbId`). */
export type DeviceStateSummary = z.output<typeof DEVICE_STATE>;

/**
 * The device's part of every `telemetry` message (merged after the process's own readings): what the
 * fleet watches, and what /metrics is rendered from. Its fields: DEVICE_TELEMETRY in topic-payloads.ts.
 */
export type DeviceTelemetry = z.output<typeof DEVICE_TELEMETRY>;

/**
 * The device as MQTT sees it. Implemented by the app; every method may be called from a command, and
 * answers that command's typed result (command-results.ts).
 */
export interface DeviceControl {
  state(): DeviceStateSummary;
  /** `cmd/out_of_service`: stop (or resume) taking orders. */
  /** `by` (every command that changes something): who gave it, e.g. `mqtt (key ops-1, request r-7)`. */
  setOutOfService(on: boolean, reason: string, by: string): void;
  /**
   * The order a signed command names by its global reference (`<device>-<db>-<order>-<nonce>`):
   * only an order of this device and of the database it runs now, with exactly that reference.
   */
  orderByReference(reference: string): { orderId: number } | { code: string; message: string };
  /** `cmd/resolve`: settles a vend_uncertain order. Throws VendgateError (.code, .message). */
  resolve(orderId: number, vended: boolean, by: string): Promise<CommandResults['resolve']>;
  /** `cmd/refund`: refunds a paid order. Throws VendgateError. */
  refund(orderId: number, by: string): Promise<CommandResults['refund']>;
  /**
   * `cmd/settle`: a person settles a parked case named by its alarm (an orphan invoice, a forged
   * event, an order a person had to check), as `vendgate settle` does. Throws VendgateError.
   */
  settle?(caseName: string, outcome: string, by: string): Promise<CommandResults['settle']>;
  /** `cmd/test_vend`: one test actuation, no money. Only when `mqtt.allowRemoteVend` is true. */
  testVend(slot: string | null, by: string): Promise<CommandResults['test_vend']>;
  runSelftest(): Promise<{ ok: boolean; report: unknown }>;
  /** Counters, last webhook/poll times, uptime… merged into every telemetry message. */
  telemetry(): DeviceTelemetry;
  /** Called on every change that may alter state(); MQTT publishes only when it really changed. */
  onStateChange(listener: () => void): void;
  /**
   * The audit record of a verified command (done or refused): an event on MQTT, and when it names
   * an order, a line in that order's history.
   */
  audit(entry: CommandAudit): void;
  /**
   * The summary of the messages on `cmd/…` no key vouched for (unsigned, unreadable, refused),
   * written at most once a minute instead of one record each: an event on the outbox.
   */
  auditUnverified?(summary: UnverifiedSummary): void;
  /** Catalog, stock and jams (src/catalog/). Absent: the catalog commands answer that this device has none. */
  catalog?: CatalogControl;
  /** The audit (DEX) and service visits (src/dex/). Absent: `cmd/dex` and `cmd/visit` answer that this device has none. */
  dex?: DexControl;
}

/**
 * `cmd/dex` and `cmd/visit` (src/mqtt/commands/families/dex.ts): the same code as `vendgate dex` and
 * `vendgate visit`. Each throws VendgateError; each publishes its read on the `dex` topic (outbox),
 * and answers its command's row of COMMAND_RESULTS.
 */
export interface DexControl {
  /** A plain read now (never a reset): its header (the file goes out on the `dex` topic). */
  read(by: string): CommandResults['dex'];
  /** Read `read` again as it was sent, published on the `dex` topic; throws VG_ERR_NOT_FOUND when it is not kept. */
  resend(read: number, by: string): CommandResults['dex'];
  /** A service visit: who came, what each filled slot now holds (sets the stock), and its reset read. */
  visit(who: string, fills: Record<string, number>, by: string): CommandResults['visit'];
}

/** `cmd/catalog`, `cmd/catalog_rollback`, `cmd/refill`, `cmd/clear_jam`. Each throws VendgateError. */
export interface CatalogControl {
  /** Validates the whole document (every problem in the error, nothing applied) and applies it. */
  apply(document: unknown, by: string): CommandResults['catalog'];
  rollback(by: string): CommandResults['catalog_rollback'];
  refill(slot: string, count: number, by: string): CommandResults['refill'];
  clearJam(slot: string, by: string): CommandResults['clear_jam'];
  /** Slots of the catalog in use (Home Assistant gets a stock sensor per slot). */
  slots(): string[];
}

/** What the audit of one command records. */
export interface CommandAudit {
  command: string;
  /** The request id (as claimed, when the command was refused before it was verified). */
  requestId: string | null;
  keyId: string | null;
  ok: boolean;
  code: string | null;
  /** The signature verified: the key id and request id can be believed. */
  verified: boolean;
  /** A request id seen before: answered from the record, nothing ran. */
  replay?: boolean;
  orderId?: number;
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
  db: Db;
  /** Who may sign the commands that move money, goods or prices (settings `commands`). */
  commands: CommandAuthSettings;
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
