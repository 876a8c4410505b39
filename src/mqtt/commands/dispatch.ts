import { ErrorCodes } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import type { CommandAudit } from '../types.js';
import { CommandErrorCodes, UNVERIFIED, type CommandResult, type Handled } from './answers.js';
import type { CommandContext } from './family.js';
import type { CommandAuthSettings } from './envelope.js';
import { createReplayGuard } from './replay.js';
import type { CommandRecord } from './record.js';
import { createSignedCommands } from './signed.js';
import { createCommandTally, type UnverifiedSummary } from './tally.js';
import { COMMAND_NAMES, createCommandTable } from './table.js';
import { readCommand } from './unsigned.js';

/** How many recent commands are remembered: a QoS 1 redelivery gets the first answer again, not a second run. */
const REMEMBERED_REQUESTS = 200;

export interface CommandHandler {
  /** Handles one message on `cmd/<name>`; never throws. Resolves once the result was handed on. */
  handle(name: string, payload: Buffer, retained: boolean): Promise<void>;
  /** The messages no key vouched for since the last call (counted, never written each), or null. */
  takeUnverifiedSummary(): UnverifiedSummary | null;
}

/**
 * `cmd/<name>` in, one answer out: a signed envelope through signed.ts, anything else through
 * unsigned.ts, each command run by its family's handler (table.ts). An exact repeat shares the first
 * execution; a verified command gets an audit record each, the others are only counted.
 */
export function createCommandHandler(
  deps: CommandContext & {
    logger: Logger;
    /** This device's id: a signed command names the device it is for. */
    deviceId: string;
    /** The operator keys and the limits of an envelope's validity (settings `commands`). */
    auth: CommandAuthSettings;
    /**
     * The database the device runs and when its current life began (src/store/lineage.ts): an
     * envelope for another database, or issued before, is refused.
     */
    database?: { id: string; since(): number | null };
    /** Request ids of verified commands, on disk: a replay is answered from it, across restarts. */
    record: CommandRecord;
    /** Publishes a result on `cmd/<name>/result` (not retained). */
    reply(name: string, result: CommandResult): void;
  },
): CommandHandler {
  const { control, clock, logger, reply } = deps;
  const recent = new Map<string, Promise<Handled>>();
  const unverified = createCommandTally(COMMAND_NAMES);
  const run = createCommandTable(deps, logger);
  const replays = createReplayGuard({ record: deps.record, clock, logger });
  const signed = createSignedCommands({ ...deps, replays, run });

  function audit(entry: CommandAudit): void {
    try {
      control.audit(entry);
    } catch (err) {
      logger.error({ err, command: entry.command, requestId: entry.requestId }, 'could not write the audit record of a command');
    }
  }

  async function handleOne(name: string, payload: Buffer): Promise<void> {
    const key = requestKey(name, payload);
    let pending = key ? recent.get(key) : undefined;
    const repeat = pending !== undefined;
    if (!pending) {
      pending = readCommand(name, payload, { signed, run });
      if (key) {
        recent.set(key, pending);
        if (recent.size > REMEMBERED_REQUESTS) recent.delete(recent.keys().next().value!);
      }
    }
    const first = await pending;
    // Nothing was recorded: the same message again (a redelivery) may run once storage works.
    if (key && !first.result.ok && first.result.error.code === ErrorCodes.STORAGE) recent.delete(key);
    // An exact repeat shares the first execution: it says so, it never ran twice.
    const result: CommandResult = repeat ? { ...first.result, replay: true } : first.result;
    const replayed = result.replay === true;
    const code = result.ok ? (replayed ? CommandErrorCodes.REPLAYED : null) : result.error.code;
    if (!first.origin.verified) {
      // No key vouches for it (unsigned, unreadable, refused): counted in memory, summarised by the
      // caller at most once a minute. One durable record each would let anyone wear out the card.
      unverified.add(name, code, clock.now());
      logger.debug({ command: name, requestId: result.requestId, ok: result.ok, code }, 'unverified command handled');
      reply(name, result);
      return;
    }
    // One audit record per verified message, whatever became of it (done, refused, invalid, replayed).
    audit({ command: name, ...first.origin, ok: result.ok && !replayed, code, ...(replayed ? { replay: true } : {}) });
    logger.info(
      {
        command: name,
        requestId: result.requestId,
        ok: result.ok,
        code: result.ok ? undefined : result.error.code,
        repeat,
        replay: result.replay,
      },
      'command handled',
    );
    reply(name, result);
  }

  return {
    async handle(name, payload, retained) {
      // A retained command would run again on every reconnect; an empty payload is someone clearing one.
      if (retained || payload.length === 0) {
        if (payload.length > 0) logger.warn({ command: name }, 'ignored a retained command; publish commands without the retain flag');
        return;
      }
      try {
        await handleOne(name, payload);
      } catch (err) {
        // The caller does not await this (an MQTT message handler): a rejection would end the process.
        logger.error({ err, command: name }, 'a command could not be handled');
      }
    },
    takeUnverifiedSummary: () => unverified.take(),
  };
}

/** Exact repeats (a QoS 1 redelivery carries the same bytes) share one execution. */
function requestKey(name: string, payload: Buffer): string | null {
  return payload.length <= 4_096 ? `${name}\u0000${payload.toString('utf8')}` : null;
}
