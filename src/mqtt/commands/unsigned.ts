import { CommandErrorCodes, UNVERIFIED, failure, type Handled, type Origin } from './answers.js';
import { SIGNED_COMMANDS, isEnvelope } from './envelope.js';
import { requestId } from './family.js';
import { bodyProblems, isCommand, unknownCommand, type RunCommand } from './table.js';

/**
 * One message on `cmd/<name>`, read: not JSON or not an object is refused; an envelope goes to
 * `signed`; an unsigned command runs only when it moves no money, goods or prices and its body is
 * valid. Nothing unsigned is believed: its origin is unverified whatever it claims.
 */
export async function readCommand(
  name: string,
  payload: Buffer,
  path: { signed(name: string, envelope: Record<string, unknown>): Promise<Handled>; run: RunCommand },
): Promise<Handled> {
  let body: unknown;
  try {
    body = JSON.parse(payload.toString('utf8'));
  } catch {
    const result = failure(null, CommandErrorCodes.BAD_REQUEST, 'the body is not JSON; send an object such as {"requestId":"r1"}');
    return { result, origin: UNVERIFIED };
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return {
      result: failure(null, CommandErrorCodes.BAD_REQUEST, 'the body must be a JSON object with a requestId'),
      origin: UNVERIFIED,
    };
  }
  const record = body as Record<string, unknown>;
  if (isEnvelope(record)) return path.signed(name, record);
  const id = requestId.safeParse(record.requestId).success ? (record.requestId as string | number) : null;
  const origin: Origin = { ...UNVERIFIED, requestId: id === null ? null : String(id) };
  if (!isCommand(name)) return { result: failure(id, CommandErrorCodes.UNKNOWN_COMMAND, unknownCommand(name)), origin };
  const problems = bodyProblems(name, record);
  if (SIGNED_COMMANDS.has(name)) {
    // Moves money, goods or prices: only an operator key may. Nothing runs; every problem is listed.
    const lines = [
      `${name} moves money, goods or prices and must be signed by an operator key this device knows (vendgate command sign)`,
      ...problems,
    ];
    const result = failure(id, CommandErrorCodes.UNSIGNED, `command refused, nothing done: ${lines.join('; ')}`, { problems: lines });
    return { result, origin };
  }
  if (problems.length > 0) {
    return { result: failure(id, CommandErrorCodes.BAD_REQUEST, `invalid ${name} command: ${problems.join('; ')}`), origin };
  }
  return { result: await path.run(name, record, id, 'mqtt'), origin };
}
