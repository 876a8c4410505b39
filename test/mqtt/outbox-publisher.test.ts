import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { inTransaction } from '../../src/store/index.js';
import { createMqtt } from '../../src/mqtt/index.js';
import { mqttSchema } from '../../src/settings/sections/mqtt.js';
import { systemClock } from '../../src/util/index.js';
import { restartableBroker } from '../helpers/broker.js';
import { broker, createDevice, onCleanup, parseEvents, watching } from './harness.js';
import { waitFor } from '../helpers/wait.js';

describe('outbox publisher', () => {
  it('publishes events in seq order with their seq and id, and deletes each row once the broker acknowledged it', async () => {
    const { url } = await broker();
    const device = createDevice(url);
    const events = await watching(url, [`${device.base}/events`]);
    await device.mqtt.start();
    const ids = [...device.write(3), ...device.write(1, 'invoice.created'), ...device.write(46)];

    await events.until(() => events.messages.length >= 50, { what: '50 events' });
    const received = parseEvents(events.messages);
    expect(received.map((e) => e.id)).toEqual(ids);
    expect(received.map((e) => e.seq)).toEqual([...received.map((e) => e.seq)].sort((a, b) => a - b));
    expect(received[3]).toMatchObject({ type: 'invoice.created', deviceId: device.deviceId, orderId: 4 });
    await waitFor(() => device.outbox.depth() === 0, { what: 'the outbox to drain' });
  });

  it('events written while the broker is down arrive after it comes back: in seq order, none missing, none twice', async () => {
    const broker = await restartableBroker();
    onCleanup(() => broker.stop());
    const device = createDevice(broker.url);
    await device.mqtt.start();
    const before = device.write(5);
    await waitFor(() => device.outbox.depth() === 0, { what: 'the first events to be acknowledged' });

    await broker.stop();
    await waitFor(() => !device.mqtt.connected(), { what: 'the device to notice the broker is gone' });
    const during = [...device.write(20), ...device.write(1, 'vend.succeeded'), ...device.write(79)];
    expect(device.outbox.depth()).toBe(100);

    await broker.start();
    await waitFor(() => device.outbox.depth() === 0, { what: 'the backlog to be acknowledged' });
    const events = parseEvents(broker.received.filter((p) => p.topic === `${device.base}/events`));
    expect(events.map((e) => e.id)).toEqual([...before, ...during]);
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: 105 }, (_, i) => seqs[0]! + i));
  });

  it('a broker that dies mid-stream loses nothing: after deduplication by id every event arrives once, in seq order', async () => {
    const broker = await restartableBroker();
    onCleanup(() => broker.stop());
    const device = createDevice(broker.url, { maxInflight: 20 });
    await device.mqtt.start();
    await waitFor(() => device.mqtt.connected(), { what: 'the device to connect' });
    const written = device.write(2_000);
    const topic = `${device.base}/events`;
    await waitFor(() => broker.received.filter((p) => p.topic === topic).length >= 100, { what: 'the stream to be under way' });
    await broker.stop();
    written.push(...device.write(50));
    await broker.start();
    await waitFor(() => device.outbox.depth() === 0, { timeoutMs: 20_000, what: 'the outbox to drain' });

    const events = parseEvents(broker.received.filter((p) => p.topic === topic));
    const firstSeen: string[] = [];
    const seen = new Set<string>();
    for (const event of events) {
      if (!seen.has(event.id)) firstSeen.push(event.id);
      seen.add(event.id);
    }
    expect(firstSeen).toEqual(written);
    // Only what was in flight when the connection died can have been sent twice.
    expect(events.length - written.length).toBeLessThanOrEqual(20);
  });

  it('keeps at most outboxMaxRows while the broker is away, dropping the oldest events (counted) and never an alarm', async () => {
    const broker = await restartableBroker();
    onCleanup(() => broker.stop());
    await broker.stop();
    const device = createDevice(broker.url, { outboxMaxRows: 100 });
    await device.mqtt.start();
    inTransaction(device.db, () => device.outbox.raiseAlarm('vend_uncertain/1', 'critical', 'check the machine'));
    const ids = device.write(150);

    await waitFor(() => device.outbox.depth() === 100, { what: 'the outbox to be pruned to its bound' });
    expect(device.outbox.counters().outbox_dropped).toBe(51);

    await broker.start();
    await waitFor(() => device.outbox.depth() === 0, { what: 'the outbox to drain' });
    const published = broker.received.filter(
      (p) => p.topic.startsWith(device.base) && (p.topic.endsWith('/events') || p.topic.includes('/alarms/')),
    );
    expect(published[0]).toMatchObject({ topic: `${device.base}/alarms/vend_uncertain/1`, retain: true });
    expect(parseEvents(published.slice(1)).map((e) => e.id)).toEqual(ids.slice(51));
  });

  it('a new publisher on the same database resumes where the previous one stopped', async () => {
    const broker = await restartableBroker();
    onCleanup(() => broker.stop());
    await broker.stop();
    const first = createDevice(broker.url);
    await first.mqtt.start();
    const ids = first.write(30);
    await first.mqtt.stop();

    const second = createMqtt(
      {
        outbox: first.outbox,
        clock: systemClock,
        logger: pino({ level: 'silent' }),
        deviceId: first.deviceId,
        control: first.control,
        commands: { keys: [], maxLifetimeSec: 3_600, clockSkewSec: 300 },
        db: first.db,
      },
      mqttSchema().parse({ url: broker.url, prefix: first.prefix, reconnectMinMs: 100, reconnectMaxMs: 500 }),
    );
    onCleanup(() => second.stop());
    await broker.start();
    await second.start();
    await waitFor(() => first.outbox.depth() === 0, { what: 'the second publisher to drain the outbox' });
    expect(parseEvents(broker.received.filter((p) => p.topic === `${first.base}/events`)).map((e) => e.id)).toEqual(ids);
  });
});
