import { connect as mqttConnect, type IClientOptions, type MqttClient } from 'mqtt';
import { databaseEpoch, databaseId, inTransaction, STORAGE_ALARMS, type StorageFault } from '../store/index.js';
import { createTopics } from './topics.js';
import { createOutboxPublisher } from './publisher.js';
import { createCommandHandler, CommandErrorCodes, type CommandResult } from './commands.js';
import { createCommandRecord } from './command-record.js';
import { answerKeyPath, loadOrCreateAnswerKey, type AnswerKey } from './answer-key.js';
import { clientOptions, backoffDelay, redactUrl, withTimeout } from './connection.js';
import { startEmbeddedBroker, recordEmbeddedRefusal, recordEmbeddedInstance, type EmbeddedBroker } from './embedded-broker.js';
import { randomBytes } from 'node:crypto';
import { firstFreePort, movePortAdvice } from '../util/free-port.js';
import { readSystem, telemetryPayload, checkDiskAlarm } from './telemetry.js';
import { discoveryMessages } from './home-assistant.js';
import { buildInfo } from '../version.js';
import type { DeviceTelemetry, Mqtt, MqttDeps, MqttSettings } from './types.js';

/** The outbox table is polled this often as a safety net for a missed kick(). */
const POLL_INTERVAL_MS = 1_000;
/** How long stop() waits for `offline` and the last PUBACKs before dropping the connection. */
const STOP_GRACE_MS = 2_000;
/** The summary of unverified commands is written at most this often. */
const UNVERIFIED_SUMMARY_MS = 60_000;

/**
 * Operator monitoring over MQTT: publishes the outbox, presence, state and telemetry, and answers
 * commands. The broker being away never blocks or fails the service: it reconnects in the background.
 */
export function createMqtt(deps: MqttDeps, settings: MqttSettings): Mqtt {
  const { outbox, clock, control, deviceId } = deps;
  const log = deps.logger.child({ module: 'mqtt' });
  const topics = createTopics(settings.prefix, deviceId);
  const publisher = createOutboxPublisher(
    { outbox, logger: log, topics },
    { maxInflight: settings.maxInflight, maxRows: settings.outboxMaxRows },
  );
  const transaction = <T>(fn: () => T): T => inTransaction(deps.db, fn);
  const dbPath = deps.db.memory ? null : deps.db.name;

  let url = settings.url;
  let options: IClientOptions | null = null;
  let broker: EmbeddedBroker | null = null;
  let client: MqttClient | null = null;
  let connectedSince: number | null = null;
  let attempt = 0;
  let started = false;
  let stopped = false;
  let stopping: Promise<void> | null = null;
  let lastState: string | null = null;
  let selftestPayload: string | null = null;
  let kickScheduled = false;
  let telemetryRunning = false;
  const timers: NodeJS.Timeout[] = [];
  let reconnectTimer: NodeJS.Timeout | null = null;

  /** Signs every answer on cmd/<name>/result (null: in-memory database, or the key could not be made). */
  let answerKey: AnswerKey | null = null;
  function loadAnswerKey(): void {
    if (dbPath === null || answerKey) return;
    try {
      answerKey = loadOrCreateAnswerKey(answerKeyPath(dbPath));
      log.info({ publicKey: answerKey.publicKey }, "answers to commands are signed with this device's key (vendgate command device-key)");
    } catch (err) {
      log.error({ err }, 'the device answer key could not be read or made: answers go out unsigned and vendgate command send refuses them');
    }
  }

  const commands = createCommandHandler({
    control,
    clock,
    logger: log,
    allowRemoteVend: settings.allowRemoteVend,
    deviceId,
    auth: deps.commands,
    record: createCommandRecord(deps.db),
    database: { id: databaseId(deps.db), since: () => databaseEpoch(deps.db) },
    reply: (name: string, result: CommandResult) => {
      let payload: string;
      try {
        payload = JSON.stringify(result);
      } catch (err) {
        // A result the app cannot serialise (a cycle, a BigInt) still gets an answer.
        log.error({ err, command: name }, 'command result is not JSON');
        payload = JSON.stringify({
          requestId: result.requestId,
          ok: false,
          error: { code: CommandErrorCodes.COMMAND_FAILED, message: 'the result could not be serialised' },
        });
      }
      send(topics.result(name), answerKey ? answerKey.signAnswer(deviceId, name, JSON.parse(payload) as object) : payload, false);
    },
    onSelftest: (report) => publishSelftest(report),
  });

  /** Publishes on the live connection with QoS 1; dropped when there is none (callers republish on connect). */
  function send(topic: string, payload: string, retain: boolean, done?: (err?: Error) => void): boolean {
    const c = client;
    if (!c || connectedSince === null) return false;
    c.publish(topic, payload, { qos: 1, retain }, (err) => {
      if (err && client === c) log.warn({ err, topic }, 'MQTT publish failed');
      done?.(err ?? undefined);
    });
    return true;
  }

  const dbId = databaseId(deps.db);
  function publishState(): void {
    if (connectedSince === null) return;
    let payload: string;
    try {
      const s = control.state();
      payload = JSON.stringify({
        mode: s.mode,
        phase: s.phase,
        orderId: s.orderId,
        reference: s.reference,
        since: s.since,
        ...(s.reason ? { reason: s.reason } : {}),
        // The database it runs: `vendgate command send` signs for it (src/mqtt/command-envelope.ts).
        dbId,
      });
    } catch (err) {
      log.warn({ err }, 'could not read the device state');
      return;
    }
    if (payload === lastState) return;
    if (send(topics.state, payload, true)) lastState = payload;
  }

  /**
   * The storage alarm straight onto the broker, retained (no outbox row: the database may not take
   * one). The outbox's own row, written once the card allows, publishes the same on the same topic.
   */
  function publishStorageAlarm(fault: StorageFault | null, previous: StorageFault | null): void {
    if (previous && previous.kind !== fault?.kind) send(topics.relative(`alarms/${STORAGE_ALARMS[previous.kind]}`), '', true);
    if (!fault) return;
    const name = STORAGE_ALARMS[fault.kind];
    const payload = {
      name,
      severity: 'critical',
      message: deps.storage?.describe() ?? `storage fault on ${fault.path}`,
      since: new Date(fault.since).toISOString(),
      deviceId,
      path: fault.path,
      freeBytes: fault.freeBytes,
      code: fault.code,
    };
    send(topics.relative(`alarms/${name}`), JSON.stringify(payload), true);
  }

  function publishSelftest(report: unknown): void {
    selftestPayload = JSON.stringify({ at: new Date(clock.now()).toISOString(), report });
    publishSelftestNow();
  }

  function publishSelftestNow(): void {
    const payload = selftestPayload;
    if (payload === null) return;
    send(topics.selftest, payload, true, (err) => {
      if (!err && selftestPayload === payload) selftestPayload = null;
    });
  }

  async function telemetryTick(): Promise<void> {
    if (telemetryRunning || stopped) return;
    telemetryRunning = true;
    try {
      const system = await readSystem({ dbPath });
      if (stopped) return;
      if (checkDiskAlarm({ outbox, logger: log, transaction }, system.disk, settings.diskLowFreeMb * 1024 * 1024)) kick();
      if (connectedSince === null) return;
      let app: Partial<DeviceTelemetry> = {};
      try {
        app = control.telemetry();
      } catch (err) {
        log.warn({ err }, 'the app could not provide telemetry');
      }
      const payload = telemetryPayload({ deviceId, now: clock.now(), outbox, system, connectedSince, app });
      send(topics.telemetry, JSON.stringify(payload), false);
    } catch (err) {
      log.warn({ err }, 'telemetry failed');
    } finally {
      telemetryRunning = false;
    }
  }

  function onConnect(c: MqttClient, sessionPresent: boolean): void {
    if (client !== c || stopped) return;
    attempt = 0;
    connectedSince = clock.now();
    log.info({ url: redactUrl(url), clientId: options?.clientId, sessionPresent }, 'MQTT connected');
    // Subscribed on every connect: a restarted broker may have lost the persistent session.
    c.subscribe(topics.commands, { qos: 1 }, (err) => {
      if (err && client === c) log.warn({ err }, 'could not subscribe to commands');
    });
    send(topics.status, 'online', true);
    lastState = null;
    publishState();
    if (settings.homeAssistant) {
      const mode = safeMode();
      let slots: string[] = [];
      try {
        slots = control.catalog?.slots() ?? [];
      } catch (err) {
        log.warn({ err }, 'could not read the catalog slots for Home Assistant');
      }
      for (const message of discoveryMessages({
        discoveryPrefix: settings.homeAssistantPrefix,
        deviceId,
        mode,
        topics,
        slots,
        version: buildInfo().version,
      })) {
        send(message.topic, message.payload, true);
      }
    }
    publishSelftestNow();
    const storageFault = deps.storage?.fault() ?? null;
    if (storageFault) publishStorageAlarm(storageFault, null);
    publisher.attach({
      publish: (topic, payload, retain, done) => c.publish(topic, payload, { qos: 1, retain }, (err) => done(err ?? undefined)),
    });
    void telemetryTick();
  }

  function onClose(c: MqttClient): void {
    if (client !== c) return;
    const wasConnected = connectedSince !== null;
    connectedSince = null;
    client = null;
    publisher.detach();
    c.end(true);
    if (stopped) return;
    const delay = backoffDelay(attempt, settings.reconnectMinMs, settings.reconnectMaxMs);
    attempt += 1;
    if (wasConnected) log.warn({ url: redactUrl(url), retryInMs: delay }, 'MQTT connection lost; reconnecting');
    else log.debug({ url: redactUrl(url), retryInMs: delay, attempt }, 'MQTT broker unreachable; retrying');
    reconnectTimer = setTimeout(connect, delay);
    reconnectTimer.unref();
  }

  function connect(): void {
    reconnectTimer = null;
    if (stopped || !options) return;
    const c = mqttConnect(url, options);
    client = c;
    c.on('connect', (connack) => onConnect(c, connack.sessionPresent));
    c.on('close', () => onClose(c));
    c.on('error', (err) => {
      if (client !== c) return;
      const code = (err as { code?: unknown }).code;
      if (code === 4 || code === 5)
        log.error({ err }, 'the broker refused the credentials: check mqtt.username and VENDGATE_MQTT_PASSWORD');
      else if (attempt === 0) log.warn({ err, url: redactUrl(url) }, 'MQTT connection error');
    });
    c.on('message', (topic, payload, packet) => {
      if (client !== c) return;
      const name = topics.commandName(topic);
      if (name !== null && !topic.endsWith('/result')) void commands.handle(name, payload, packet.retain);
    });
  }

  function kick(): void {
    if (kickScheduled || stopped) return;
    kickScheduled = true;
    setImmediate(() => {
      kickScheduled = false;
      publisher.pump();
    });
  }

  function safeMode(): string {
    try {
      return control.state().mode;
    } catch {
      return 'vending';
    }
  }

  async function start(): Promise<void> {
    if (started) return;
    started = true;
    if (settings.url === '') {
      log.info('MQTT disabled (mqtt.url is empty)');
      return;
    }
    let login = settings;
    if (settings.url === 'embedded') {
      // The service logs in with mqtt.username/VENDGATE_MQTT_PASSWORD when set (operators use the same
      // login to send commands), else with one made up now; anonymous local clients only read.
      const own =
        settings.username !== undefined && settings.password !== undefined
          ? { username: settings.username, password: settings.password }
          : { username: `vendgate-${randomBytes(4).toString('hex')}`, password: randomBytes(24).toString('base64url') };
      const instance = randomBytes(8).toString('hex');
      try {
        broker = await startEmbeddedBroker({
          host: '127.0.0.1',
          port: settings.embeddedPort,
          access: { login: own, anonymousMayPublish: (topic) => topic === topics.selftest || topic.startsWith(`${topics.selftest}/`) },
          identity: { topic: topics.broker, payload: instance },
        });
        login = { ...settings, ...own };
        url = broker.url;
        log.info({ url }, 'embedded MQTT broker listening');
      } catch (err) {
        // Fails closed: whatever holds the port is not ours, so the service never logs in to it
        // (it would hand over the operator's password and obey its commands). It runs without MQTT.
        const taken = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
        const reason = taken
          ? `port 127.0.0.1:${settings.embeddedPort} is taken by another program (Mosquitto?)`
          : `the embedded broker could not start (${(err as Error).message})`;
        try {
          recordEmbeddedRefusal(deps.db, { at: new Date(clock.now()).toISOString(), port: settings.embeddedPort, reason });
        } catch (dbErr) {
          log.warn({ err: dbErr }, 'could not note the embedded broker refusal for the selftest');
        }
        const free = taken ? await firstFreePort('127.0.0.1', settings.embeddedPort + 1).catch(() => null) : null;
        log.error(
          { port: settings.embeddedPort, ...(taken ? {} : { err }) },
          `MQTT off: ${reason}: ${movePortAdvice('mqtt.embeddedPort', settings.embeddedPort, free)}, or set mqtt.url to that broker's URL (mqtt://127.0.0.1:${settings.embeddedPort}) with its own login to use it; vendgate logs in to no broker it did not start`,
        );
        return;
      }
      try {
        recordEmbeddedRefusal(deps.db, null);
        recordEmbeddedInstance(deps.db, { at: new Date(clock.now()).toISOString(), port: broker.port, instance });
      } catch (dbErr) {
        log.warn({ err: dbErr }, 'could not note the embedded broker for the selftest');
      }
    }
    try {
      options = clientOptions(login, deviceId, topics);
    } catch (err) {
      log.error({ err }, 'MQTT not started: fix the TLS settings');
      return;
    }
    loadAnswerKey();
    control.onStateChange(publishState);
    deps.storage?.onChange((fault, previous) => publishStorageAlarm(fault, previous));
    try {
      publisher.prune();
    } catch (err) {
      log.error({ err }, 'outbox prune failed');
    }
    const poll = setInterval(() => {
      try {
        publisher.prune();
      } catch (err) {
        log.error({ err }, 'outbox prune failed');
      }
      publisher.pump();
    }, POLL_INTERVAL_MS);
    const telemetry = setInterval(() => void telemetryTick(), settings.telemetryIntervalSec * 1000);
    const unverified = setInterval(writeUnverifiedSummary, UNVERIFIED_SUMMARY_MS);
    for (const timer of [poll, telemetry, unverified]) {
      timer.unref();
      timers.push(timer);
    }
    log.info({ url: redactUrl(url), clientId: options.clientId, base: topics.base }, 'MQTT starting');
    // After start() has returned and READY=1 is out: the mqtt library builds its transports at the
    // first connect (~75 ms of start-up on the build machine, more on a Pi), and nothing of the money
    // path needs the broker: start-up to ready does not wait for it.
    setImmediate(connect);
  }

  /** At most one durable record a minute for every message on cmd/… that no key vouched for. */
  function writeUnverifiedSummary(): void {
    const summary = commands.takeUnverifiedSummary();
    if (!summary) return;
    log.info({ ...summary }, 'unverified commands in the last minute (unsigned, unreadable or refused): counted, not run');
    try {
      control.auditUnverified?.(summary);
      // Directly, not kick(): at stop the summary still goes out before the connection ends.
      publisher.pump();
    } catch (err) {
      log.error({ err }, 'could not write the summary of unverified commands');
    }
  }

  async function stopOnce(): Promise<void> {
    stopped = true;
    for (const timer of timers.splice(0)) clearInterval(timer);
    writeUnverifiedSummary();
    if (reconnectTimer) clearTimeout(reconnectTimer);
    const c = client;
    if (c && connectedSince !== null) {
      // A clean stop says so itself: the last will only covers a crash or a lost network.
      const offlineState = {
        ...(lastState ? (JSON.parse(lastState) as object) : { mode: safeMode() }),
        phase: 'offline',
        orderId: null,
        reference: null,
        since: new Date(clock.now()).toISOString(),
      };
      // A connection that dies meanwhile never acknowledges: stop waiting as soon as it is gone.
      const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
      await withTimeout(
        Promise.race([
          closed,
          Promise.all([
            new Promise<void>((resolve) => {
              if (!send(topics.state, JSON.stringify(offlineState), true, () => resolve())) resolve();
            }),
            new Promise<void>((resolve) => {
              if (!send(topics.status, 'offline', true, () => resolve())) resolve();
            }),
          ]),
        ]),
        STOP_GRACE_MS,
      );
      // end(false) waits for the outbox rows still in flight, so their PUBACKs still delete them.
      const ended = await withTimeout(
        Promise.race([closed, new Promise<void>((resolve) => c.end(false, {}, () => resolve()))]),
        STOP_GRACE_MS,
      );
      if (!ended) c.stream?.destroy();
    } else if (c) {
      c.end(true);
    }
    client = null;
    connectedSince = null;
    publisher.detach();
    if (broker) await broker.close();
    if (started && settings.url !== '') log.info('MQTT stopped');
  }

  return {
    start,
    stop() {
      stopping ??= stopOnce();
      return stopping;
    },
    kick,
    connected: () => connectedSince !== null,
    publishSelftest,
  };
}
