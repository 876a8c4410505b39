export { createOutbox, type Outbox, type OutboxRow, type AlarmRow, type EventType } from './outbox.js';
export { ALARM_PAYLOAD, type AlarmPayload } from './alarm-payload.js';
