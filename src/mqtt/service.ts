import type { IClientOptions } from 'mqtt';
import { databaseId, inTransaction } from '../store/index.js';
import { createTopics } from './topics.js';
import { clientOptions, redactUrl } from './connection.js';
import { chooseBroker } from './broker-policy.js';
import type { EmbeddedBroker } from './embedded-broker.js';
import { createReconnectingClient, type ReconnectingClient } from './reconnecting-client.js';
import type { Feature } from './features/feature.js';
import { createOutboxPump } from './features/outbox-pump.js';
import { createPresence } from './features/presence.js';
import { createTelemetry } from './features/telemetry.js';
import { createStorageAlarms } from './features/storage-alarms.js';
import { createSelftestReports } from './features/selftest.js';
import { createCommands } from './features/commands.js';
import type { Mqtt, MqttDeps, MqttSettings } from './types.js';

/**
 * Operator monitoring over MQTT: one reconnecting connection (reconnecting-client.ts) and the
 * features that use it (features/). The broker being away never blocks or fails the service: it
 * reconnects in the background.
 */
export function createMqtt(deps: MqttDeps, settings: MqttSettings): Mqtt {
  const { outbox, clock, control, deviceId } = deps;
  const log = deps.logger.child({ module: 'mqtt' });
  const topics = createTopics(settings.prefix, deviceId);

  const pump = createOutboxPump({ outbox, logger: log, topics }, settings);
  const presence = createPresence({ control, clock, logger: log, topics, deviceId, dbId: databaseId(deps.db) }, settings);
  const selftest = createSelftestReports({ clock, topics });
  const commands = createCommands({
    control,
    clock,
    logger: log,
    topics,
    deviceId,
    db: deps.db,
    auth: deps.commands,
    allowRemoteVend: settings.allowRemoteVend,
    onSelftest: (report) => selftest.publish(report),
    // Directly, not kick(): at stop the summary still goes out before the connection ends.
    wrote: () => pump.pump(),
  });
  const telemetry = createTelemetry(
    {
      control,
      outbox,
      clock,
      logger: log,
      topics,
      deviceId,
      dbPath: deps.db.memory ? null : deps.db.name,
      transaction: (fn) => inTransaction(deps.db, fn),
      wrote: () => pump.kick(),
    },
    settings,
  );
  const storageAlarms = createStorageAlarms({ storage: deps.storage, topics, deviceId });
  // The order of the first messages after every connect: the command subscription, `online` and the
  // state, the last selftest, the storage alarm, the outbox from its oldest row, then telemetry.
  const features: Feature[] = [commands, presence, selftest, storageAlarms, pump, telemetry];

  let client: ReconnectingClient | null = null;
  let broker: EmbeddedBroker | null = null;
  let started = false;
  let stopping: Promise<void> | null = null;

  async function start(): Promise<void> {
    if (started || stopping) return;
    started = true;
    if (settings.url === '') {
      log.info('MQTT disabled (mqtt.url is empty)');
      return;
    }
    const choice = await chooseBroker({ db: deps.db, clock, logger: log, topics }, settings);
    if (!choice) return;
    if (stopping) {
      // Stopped while its broker was starting: nothing of it stays open.
      await choice.embedded?.close();
      return;
    }
    broker = choice.embedded;
    const url = choice.url;
    let options: IClientOptions;
    try {
      options = clientOptions(choice.login, deviceId, topics);
    } catch (err) {
      log.error({ err }, 'MQTT not started: fix the TLS settings');
      return;
    }
    const clientId = options.clientId;
    const link = createReconnectingClient({
      logger: log,
      url,
      options,
      backoff: { minMs: settings.reconnectMinMs, maxMs: settings.reconnectMaxMs },
      now: () => clock.now(),
      say: { lost: 'MQTT connection lost; reconnecting', unreachable: 'MQTT broker unreachable; retrying' },
      prepare: (c) =>
        c.on('message', (topic, payload, packet) => {
          if (link.isCurrent(c)) for (const feature of features) feature.message?.(topic, payload, packet);
        }),
      onConnect: (c, sessionPresent) => {
        log.info({ url: redactUrl(url), clientId, sessionPresent }, 'MQTT connected');
        for (const feature of features) feature.connected?.(c);
      },
      onClose: () => {
        for (const feature of features) feature.disconnected?.();
      },
      onError: (err, attempt) => {
        if (err.code === 4 || err.code === 5)
          log.error({ err }, 'the broker refused the credentials: check mqtt.username and VENDGATE_MQTT_PASSWORD');
        else if (attempt === 0) log.warn({ err, url: redactUrl(url) }, 'MQTT connection error');
      },
    });
    client = link;
    for (const feature of features) feature.start(link);
    log.info({ url: redactUrl(url), clientId, base: topics.base }, 'MQTT starting');
    // After start() has returned and READY=1 is out: the mqtt library builds its transports at the
    // first connect (~75 ms of start-up on the build machine, more on a Pi), and nothing of the money
    // path needs the broker: start-up to ready does not wait for it.
    setImmediate(() => link.start());
  }

  async function stopOnce(): Promise<void> {
    for (const feature of features) feature.stop();
    if (client) await client.stop((c) => presence.farewell(c));
    pump.disconnected?.();
    if (broker) await broker.close();
    if (started && settings.url !== '') log.info('MQTT stopped');
  }

  return {
    start,
    stop() {
      stopping ??= stopOnce();
      return stopping;
    },
    kick: () => pump.kick(),
    connected: () => (client?.connectedSince() ?? null) !== null,
    publishSelftest: (report) => selftest.publish(report),
  };
}
