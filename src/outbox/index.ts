export { createOutbox, type Outbox, type OutboxRow, type AlarmRow, type EventType } from './outbox.js';
