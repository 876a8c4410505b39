import { randomUUID } from 'node:crypto';
import { prepared, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { AlarmPayload, EventPayload, EventTopic, EventType } from './events.js';

/** The events operators see and their payloads: one table, src/outbox/events.ts (types only here). */
export type { EventType, EventPayload, EventPayloads, EventTopic } from './events.js';

export interface OutboxRow {
  seq: number;
  id: string;
  kind: 'event' | 'alarm';
  topic: string;
  payload: string;
  retain: number;
  created_at: number;
}

export interface AlarmRow {
  name: string;
  severity: 'warning' | 'critical';
  message: string;
  detail: string;
  raised_at: number;
}

/**
 * The transactional outbox. Every write here happens inside the caller's transaction, so an event
 * exists if and only if the state change that caused it was committed. `mqtt/` publishes and deletes.
 */
export interface Outbox {
  /**
   * Records an event; returns its id. `seq` is assigned by the table (monotonic per device). `topic`
   * (relative, default `events`): an audit read goes to `dex`.
   */
  event<T extends EventType>(type: T, data: EventPayload<T>, ...topic: TopicArgument<T>): string;
  /** Opens (or refreshes) a retained alarm `alarms/<name>`. */
  raiseAlarm(name: string, severity: AlarmRow['severity'], message: string, detail?: Record<string, unknown>): void;
  /** Clears a retained alarm (publishes an empty retained message). No-op when it is not open. */
  clearAlarm(name: string): void;
  /**
   * Publishes `payload` retained on `topic` (relative), e.g. the applied catalog version. Stored as an
   * alarm-kind row, so prune() never drops it: a lost retained state would stay wrong on the broker.
   */
  retain(topic: string, payload: string): void;
  /** Adds to a persistent counter (telemetry). */
  count(name: string, by?: number): void;
  openAlarms(): AlarmRow[];
  /** Whether the alarm `name` is open (raised and not cleared). */
  isAlarmOpen(name: string): boolean;
  counters(): Record<string, number>;
  /** Rows not yet acknowledged by the broker, oldest first; with `afterSeq`, only those after it. */
  pending(limit: number, afterSeq?: number): OutboxRow[];
  depth(): number;
  /** Called on PUBACK. */
  acknowledge(seq: number): void;
  /** Keeps at most `maxRows`, dropping the oldest events; returns how many were dropped. */
  prune(maxRows: number): number;
}

/** `events` may be left out; any other topic (`dex`) must be named, and only for its own events. */
type TopicArgument<T extends EventType> = EventTopic<T> extends 'events' ? [topic?: 'events'] : [topic: EventTopic<T>];

export function createOutbox(deps: { db: Db; clock: Clock; deviceId: string }): Outbox {
  const { db, clock, deviceId } = deps;
  const insert = db.prepare('INSERT INTO outbox (id, kind, topic, payload, retain, created_at) VALUES (?, ?, ?, ?, ?, ?)');
  const upsertAlarm = db.prepare(
    `INSERT INTO alarms (name, severity, message, detail, raised_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET severity = excluded.severity, message = excluded.message, detail = excluded.detail`,
  );
  const deleteAlarm = db.prepare('DELETE FROM alarms WHERE name = ?');
  const addCounter = db.prepare(
    'INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value',
  );

  return {
    event(type, data, ...rest) {
      const topic: string = rest[0] ?? 'events';
      const id = randomUUID();
      const at = new Date(clock.now()).toISOString();
      insert.run(id, 'event', topic, JSON.stringify({ id, type, at, deviceId, ...data }), 0, clock.now());
      return id;
    },
    raiseAlarm(name, severity, message, detail = {}) {
      const existing = prepared(db, 'SELECT raised_at FROM alarms WHERE name = ?').get(name) as { raised_at: number } | undefined;
      const raisedAt = existing?.raised_at ?? clock.now();
      upsertAlarm.run(name, severity, message, JSON.stringify(detail), raisedAt);
      const alarm: AlarmPayload = { name, severity, message, since: new Date(raisedAt).toISOString(), deviceId, ...detail };
      const payload = JSON.stringify(alarm);
      insert.run(randomUUID(), 'alarm', `alarms/${name}`, payload, 1, clock.now());
    },
    clearAlarm(name) {
      if (deleteAlarm.run(name).changes === 0) return;
      insert.run(randomUUID(), 'alarm', `alarms/${name}`, '', 1, clock.now());
    },
    retain(topic, payload) {
      insert.run(randomUUID(), 'alarm', topic, payload, 1, clock.now());
    },
    count(name, by = 1) {
      addCounter.run(name, by);
    },
    openAlarms() {
      return prepared(db, 'SELECT * FROM alarms ORDER BY raised_at').all() as AlarmRow[];
    },
    isAlarmOpen(name) {
      return prepared(db, 'SELECT 1 FROM alarms WHERE name = ?').get(name) !== undefined;
    },
    counters() {
      const rows = prepared(db, 'SELECT name, value FROM counters').all() as { name: string; value: number }[];
      return Object.fromEntries(rows.map((r) => [r.name, r.value]));
    },
    pending(limit, afterSeq = 0) {
      return prepared(db, 'SELECT * FROM outbox WHERE seq > CAST(? AS INTEGER) ORDER BY seq LIMIT CAST(? AS INTEGER)').all(
        afterSeq,
        limit,
      ) as OutboxRow[];
    },
    depth() {
      return (prepared(db, 'SELECT count(*) AS n FROM outbox').get() as { n: number }).n;
    },
    acknowledge(seq) {
      prepared(db, 'DELETE FROM outbox WHERE seq = ?').run(seq);
    },
    prune(maxRows) {
      const excess = this.depth() - maxRows;
      if (excess <= 0) return 0;
      // Alarms are never pruned: a lost clear would leave an alarm standing forever.
      const dropped = prepared(
        db,
        "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE kind = 'event' ORDER BY seq LIMIT CAST(? AS INTEGER))",
      ).run(excess).changes;
      if (dropped > 0) addCounter.run('outbox_dropped', dropped);
      return dropped;
    },
  };
}
