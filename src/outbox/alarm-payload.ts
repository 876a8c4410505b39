/**
 * The payload of the retained `alarms/<name>` topic, in a file of its own: src/outbox/index.ts
 * re-exports it for the MQTT side, and a re-export from events.ts made every importer of the outbox
 * (the money path) evaluate all of the events' schemas with it: 109 zod builder calls, each chained
 * call a schema of its own, resident for the process's life (docs/benchmarks.md).
 */
import * as z from 'zod';

/**
 * What a retained `alarms/<name>` message says while the alarm is open (an empty retained message
 * clears it). The outbox writes it (`raiseAlarm`), the storage alarms go straight to the broker
 * (mqtt/features/storage-alarms.ts); each alarm may add its own details after these fields.
 */
export const ALARM_PAYLOAD = z
  .looseObject({
    name: z.string().describe('the alarm, as in the topic (`vend_uncertain/<order>`, `storage_full`, …)'),
    severity: z.enum(['warning', 'critical']),
    message: z.string().describe('what is wrong and what to do, in words'),
    since: z.string().describe('ISO time it was first raised (a refresh keeps it)'),
    deviceId: z.string(),
  })
  .describe("an open alarm (retained; cleared by an empty retained message); each alarm's own details follow");

export type AlarmPayload = z.input<typeof ALARM_PAYLOAD>;
