import { ErrorCodes } from '../../util/errors.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { CommandErrorCodes, failure, type CommandResult } from './answers.js';
import type { VerifiedCommand } from './envelope.js';
import type { CommandRecord, CommandRequestRow } from './record.js';

/**
 * A verified command runs once per request id: its id is on disk before it runs (record.ts), a
 * replay is answered from that record, and a redelivery while it runs waits for the same answer.
 */
export function createReplayGuard(deps: { record: CommandRecord; clock: Clock; logger: Logger }) {
  const { record, clock, logger } = deps;
  /** Verified commands still running, by request id: a redelivery meanwhile waits for the same answer. */
  const running = new Map<string, { digest: string; result: Promise<CommandResult> }>();

  /** The answer of `verified`: `execute()`'s when its request id is new, else the recorded one, marked `replay`. */
  async function once(
    name: string,
    verified: VerifiedCommand,
    orderId: number | null,
    execute: () => Promise<CommandResult>,
  ): Promise<CommandResult> {
    const id = verified.requestId;
    const inFlight = running.get(id);
    if (inFlight && inFlight.digest === verified.digest) return { ...(await inFlight.result), replay: true };
    let claim: ReturnType<CommandRecord['claim']>;
    try {
      claim = record.claim(name, verified, clock.now(), orderId);
    } catch (err) {
      // Not recorded means not run: a command whose request id could be forgotten must not move money.
      logger.error({ err, command: name, requestId: id }, 'could not record a signed command; it did not run');
      const reason = err instanceof Error ? err.message : String(err);
      return failure(
        id,
        ErrorCodes.STORAGE,
        `command not run, nothing done: the device could not record request "${id}" (${reason}); send it again once its storage works`,
      );
    }
    if (!claim.fresh) return { ...replayed(id, verified.digest, claim.row), replay: true };
    const result = execute();
    running.set(id, { digest: verified.digest, result });
    try {
      const answer = await result;
      try {
        record.finish(id, answer, clock.now());
      } catch (err) {
        logger.error(
          { err, command: name, requestId: id },
          'could not store the answer of a command (a replay will say so, and not run it)',
        );
      }
      return answer;
    } finally {
      running.delete(id);
    }
  }

  return { once };
}

/** What a request id seen before answers: the stored answer, or why there is none to repeat. */
function replayed(id: string, digest: string, row: CommandRequestRow): CommandResult {
  if (row.digest !== digest) {
    return failure(
      id,
      CommandErrorCodes.REPLAYED,
      `command refused, nothing done: request id "${id}" was used by another command (${row.command}, key ${row.key_id}) at ${new Date(row.received_at).toISOString()}; every command needs a new request id`,
    );
  }
  if (row.outcome === null) {
    return failure(
      id,
      CommandErrorCodes.REPLAYED,
      `request "${id}" was received at ${new Date(row.received_at).toISOString()} and the service stopped before it answered; it does not run again: check the order history or the device state`,
    );
  }
  return { ...(JSON.parse(row.outcome) as CommandResult), replay: true };
}
