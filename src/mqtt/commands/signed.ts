import type { Clock } from '../../util/clock.js';
import type { DeviceControl } from '../types.js';
import { CommandErrorCodes, failure, type Handled, type Origin } from './answers.js';
import { verifyCommand } from './verify.js';
import type { CommandAuthSettings } from './envelope.js';
import type { createReplayGuard } from './replay.js';
import { bodyProblems, isCommand, unknownCommand, type RunCommand } from './table.js';

/**
 * A signed command (an envelope, envelope.ts): verified for this device, this topic, this database
 * and now; its body checked; the order it names found by its reference; then run once per request id
 * (replay.ts). A refusal lists every problem, the envelope's and, where it can be read, the body's.
 */
export function createSignedCommands(deps: {
  control: Pick<DeviceControl, 'orderByReference'>;
  clock: Clock;
  deviceId: string;
  auth: CommandAuthSettings;
  database?: { id: string; since(): number | null };
  replays: ReturnType<typeof createReplayGuard>;
  run: RunCommand;
}) {
  return async function executeSigned(name: string, envelope: Record<string, unknown>): Promise<Handled> {
    const verified = verifyCommand(envelope, {
      command: name,
      deviceId: deps.deviceId,
      now: deps.clock.now(),
      settings: deps.auth,
      ...(deps.database ? { database: { id: deps.database.id, since: deps.database.since() } } : {}),
    });
    const known = isCommand(name);
    if (!verified.ok) {
      const origin: Origin = { requestId: verified.requestId, keyId: verified.keyId, verified: false };
      const listed = verified.problems.map((problem) => ({ code: problem.code as string, message: problem.message }));
      if (!known) listed.push({ code: CommandErrorCodes.UNKNOWN_COMMAND, message: unknownCommand(name) });
      // The body is not trusted (nothing runs), but where it can be read its problems are listed too:
      // the operator then fixes everything in one go instead of signing again to learn the next one.
      else if (verified.body) {
        for (const line of bodyProblems(name, { ...verified.body, requestId: verified.requestId ?? 'unverified' })) {
          listed.push({
            code: CommandErrorCodes.BAD_REQUEST,
            message: `signed.body${line.startsWith('(body)') ? line.slice(6) : `.${line}`}`,
          });
        }
      }
      const lines = listed.map((problem) => problem.message);
      const result = failure(verified.requestId, verified.code, `command refused, nothing done: ${lines.join('; ')}`, {
        problems: lines,
        codes: listed.map((problem) => problem.code),
      });
      return { result, origin };
    }
    const id = verified.requestId;
    const unnamed: Origin = { requestId: id, keyId: verified.keyId, verified: true };
    if (!known) return { result: failure(id, CommandErrorCodes.UNKNOWN_COMMAND, unknownCommand(name)), origin: unnamed };
    const body: Record<string, unknown> = { requestId: id, ...verified.body };
    const problems = bodyProblems(name, body);
    if (problems.length > 0) {
      return { result: failure(id, CommandErrorCodes.BAD_REQUEST, `invalid ${name} command: ${problems.join('; ')}`), origin: unnamed };
    }
    // The order it names: exactly this reference, in the database the device runs now.
    let orderId: number | null = null;
    if (typeof body.order === 'string') {
      const found = deps.control.orderByReference(body.order);
      if ('code' in found) return { result: failure(id, found.code, `command refused, nothing done: ${found.message}`), origin: unnamed };
      orderId = found.orderId;
    }
    const origin: Origin = { ...unnamed, ...(orderId !== null ? { orderId } : {}) };
    const by = `mqtt (key ${verified.keyId}, request ${id})`;
    const result = await deps.replays.once(name, verified, orderId, () => deps.run(name, body, id, by, orderId));
    return { result, origin };
  };
}
