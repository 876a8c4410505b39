/**
 * What the device's own topics carry, beside the events (src/outbox/events.ts) and the command
 * answers (command-results.ts): `state`, `telemetry`, `alarms/<name>`, `catalog` and `selftest`,
 * one zod schema each (`status` is the bare text `online` or `offline`). The
 * code that builds them is typed by these (types.ts: DeviceStateSummary, DeviceTelemetry;
 * features/presence.ts, telemetry.ts), and docs/reference.md and docs/mqtt-events.schema.json are
 * written from them (scripts/mqtt-contract.ts).
 */
import * as z from 'zod';
import { ALARM_PAYLOAD } from '../outbox/index.js';
import type { FiscalSnapshot } from '../fiscal/monitor.js';
import { catalogSchema } from '../settings/index.js';

const iso = z.string().describe('ISO time');
const money = z.object({ count: z.number().int(), amount: z.number().int() });

/** The device state, as `control.state()` gives it (and `cmd/out_of_service` answers it). */
export const DEVICE_STATE = z
  .object({
    mode: z.enum(['vending', 'turnstile']),
    phase: z.string().describe('idle | awaiting_payment | vending | out_of_service | offline | …'),
    orderId: z.number().int().nullable(),
    reference: z.string().nullable(),
    since: iso,
    reason: z.string().nullable().optional().describe('why the device is out of service, when it is'),
  })
  .describe('the device state, as on the `state` topic');

const fiscalSnapshot = z.object({
  register: z.string(),
  reachable: z.boolean(),
  pending: z.number().int().describe('receipts owed (queued, being sent, unknown)'),
  unknown: z.number().int(),
  oldestAgeSec: z.number().describe('age of the oldest receipt owed; 0 when none'),
  lotteryLeft: z.number().int().nullable(),
  salesPerDay: z.number(),
  salesStopped: z.string().nullable().describe('why sales are stopped for receipts, or null'),
  lastError: z.string().nullable(),
});

/** The device's part of every telemetry message (device/view.ts), merged after the process's readings. */
export const DEVICE_TELEMETRY = z.object({
  uptimeSec: z.number().int(),
  counters: z.record(z.string(), z.number()).describe('the outbox counters (orders paid, vends, refunds…), by name'),
  ordersByState: z.record(z.string(), z.number().int()).describe('orders by state, every state present (0 when none)'),
  lastPollAt: iso.nullable().describe('when the poller last had an answer from the provider'),
  providerReachable: z.boolean(),
  outboxDepth: z.number().int().describe('outbox rows the broker has not acknowledged yet'),
  openAlarms: z.array(z.string()).describe('the names of the open alarms'),
  catalogVersion: z.string(),
  stock: z.record(z.string(), z.number().int().nullable()).describe('per slot: counted stock, null where never refilled'),
  jammedSlots: z.array(z.string()),
  fiscal: fiscalSnapshot.optional().describe('the fiscal path (absent with fiscal.register: none)'),
  picklist: z
    .array(
      z.object({
        selection: z.string(),
        name: z.string(),
        stock: z.number().int().nullable(),
        sold: z.number().int(),
        filledTo: z.number().int().nullable(),
        bring: z.number().int(),
      }),
    )
    .optional()
    .describe('per selection, what to bring at the next service visit (absent without the audit): as vendgate picklist'),
  sales: z
    .object({
      currency: z.string(),
      todaySince: iso,
      today: z.record(z.string(), money),
      total: z.record(z.string(), money),
    })
    .optional()
    .describe('paid, vended and refunded sales today and in total: counts and sums (device.currency)'),
});

/** The process's own readings (telemetry.ts), before the device's part. */
const processReadings = z.object({
  ...DEVICE_TELEMETRY.pick({ uptimeSec: true, counters: true, outboxDepth: true, openAlarms: true }).shape,
  deviceId: z.string(),
  at: iso,
  version: z.string(),
  commit: z.string(),
  node: z.string(),
  mqttConnectedSince: iso.nullable(),
  memory: z.object({ rssBytes: z.number().int(), heapUsedBytes: z.number().int() }),
  cpuTempC: z.number().nullable().describe('null where the board has no readable thermal zone'),
  disk: z
    .object({ freeBytes: z.number().int(), totalBytes: z.number().int() })
    .nullable()
    .describe("the database's file system; null with an in-memory database"),
});

/** Each topic an operator reads beside `events`, `dex` and `cmd/<name>/result`, with its payload. */
export const TOPIC_PAYLOADS = {
  state: {
    topic: 'state',
    retained: true,
    schema: DEVICE_STATE.extend({ dbId: z.string().describe('the database the device runs: commands are signed for it') }).describe(
      'the device state, republished when it changes',
    ),
  },
  telemetry: {
    topic: 'telemetry',
    retained: false,
    schema: processReadings
      .extend(DEVICE_TELEMETRY.omit({ uptimeSec: true, counters: true, outboxDepth: true, openAlarms: true }).partial().shape)
      .describe('every telemetry interval: the process, then the device (its part absent when it could not be read)'),
  },
  alarm: { topic: 'alarms/<name>', retained: true, schema: ALARM_PAYLOAD },
  catalog: {
    topic: 'catalog',
    retained: true,
    schema: z
      .object({
        version: z.string(),
        previousVersion: z.string().nullable().describe('the version it replaced (null: the first since the start)'),
        source: z.string().describe('who applied it (`settings`, `mqtt (key …, request …)`, `cli`)'),
        appliedAt: iso.nullable().describe("null: the settings' own catalog"),
        items: catalogSchema().describe('the items, as in device.catalog'),
      })
      .describe('the catalog in use, on every change (catalog/catalog.ts)'),
  },
  selftest: {
    topic: 'selftest',
    retained: true,
    schema: z
      .object({ at: iso, report: z.unknown().describe('the selftest report (docs/selftest.md)') })
      .describe("the last selftest report (the service's own, or that of a vendgate selftest run beside it)"),
  },
} as const;

export type TopicPayloads = { [T in keyof typeof TOPIC_PAYLOADS]: z.input<(typeof TOPIC_PAYLOADS)[T]['schema']> };

/** The fiscal figures of telemetry are fiscal/monitor.ts's snapshot: this fails to compile when the two drift. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const FISCAL_SNAPSHOT_MATCHES: Same<z.output<typeof fiscalSnapshot>, FiscalSnapshot> = true;
