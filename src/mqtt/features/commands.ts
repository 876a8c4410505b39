import { databaseEpoch, databaseId, type Db } from '../../store/index.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { answerKeyPath, loadOrCreateAnswerKey, type AnswerKey } from '../answer-key.js';
import { CommandErrorCodes, type CommandResult } from '../commands/answers.js';
import { createCommandHandler } from '../commands/dispatch.js';
import type { CommandAuthSettings } from '../commands/envelope.js';
import { createCommandRecord } from '../commands/record.js';
import type { Topics } from '../topics.js';
import type { DeviceControl } from '../types.js';
import type { Feature, Link } from './feature.js';

/** The summary of unverified commands is written at most this often. */
const UNVERIFIED_SUMMARY_MS = 60_000;

/**
 * `cmd/<name>` in, `cmd/<name>/result` out, signed by the device's own answer key (answer-key.ts;
 * none with an in-memory database). Subscribed on every connect: a restarted broker may have lost the
 * persistent session. The commands no key vouched for are summarised once a minute and at stop.
 */
export function createCommands(deps: {
  control: DeviceControl;
  clock: Clock;
  logger: Logger;
  topics: Topics;
  deviceId: string;
  db: Db;
  auth: CommandAuthSettings;
  allowRemoteVend: boolean;
  /** A selftest run by command also updates the retained `selftest` topic. */
  onSelftest(report: unknown): void;
  /** After the summary was written to the outbox: publish it now (stop still sends it). */
  wrote(): void;
}): Feature {
  const { control, topics, logger: log, deviceId } = deps;
  const dbPath = deps.db.memory ? null : deps.db.name;
  let link: Link | null = null;
  let answerKey: AnswerKey | null = null;
  let timer: NodeJS.Timeout | null = null;

  const handler = createCommandHandler({
    control,
    clock: deps.clock,
    logger: log,
    allowRemoteVend: deps.allowRemoteVend,
    deviceId,
    auth: deps.auth,
    record: createCommandRecord(deps.db),
    database: { id: databaseId(deps.db), since: () => databaseEpoch(deps.db) },
    reply,
    onSelftest: deps.onSelftest,
  });

  function reply(name: string, result: CommandResult): void {
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
    const signed = answerKey ? answerKey.signAnswer(deviceId, name, JSON.parse(payload) as object) : payload;
    link?.publish(topics.result(name), signed, false);
  }

  function loadAnswerKey(): void {
    if (dbPath === null || answerKey) return;
    try {
      answerKey = loadOrCreateAnswerKey(answerKeyPath(dbPath));
      log.info({ publicKey: answerKey.publicKey }, "answers to commands are signed with this device's key (vendgate command device-key)");
    } catch (err) {
      log.error({ err }, 'the device answer key could not be read or made: answers go out unsigned and vendgate command send refuses them');
    }
  }

  /** At most one durable record a minute for every message on cmd/… that no key vouched for. */
  function writeUnverifiedSummary(): void {
    const summary = handler.takeUnverifiedSummary();
    if (!summary) return;
    log.info({ ...summary }, 'unverified commands in the last minute (unsigned, unreadable or refused): counted, not run');
    try {
      control.auditUnverified?.(summary);
      deps.wrote();
    } catch (err) {
      log.error({ err }, 'could not write the summary of unverified commands');
    }
  }

  return {
    start(next) {
      link = next;
      loadAnswerKey();
      timer = setInterval(writeUnverifiedSummary, UNVERIFIED_SUMMARY_MS);
      timer.unref();
    },
    connected(c) {
      c.subscribe(topics.commands, { qos: 1 }, (err) => {
        if (err && link?.isCurrent(c)) log.warn({ err }, 'could not subscribe to commands');
      });
    },
    message(topic, payload, packet) {
      const name = topics.commandName(topic);
      if (name !== null && !topic.endsWith('/result')) void handler.handle(name, payload, packet.retain);
    },
    stop() {
      if (timer) clearInterval(timer);
      writeUnverifiedSummary();
    },
  };
}
