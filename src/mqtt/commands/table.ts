import { VendgateError } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import type { CommandResults } from '../command-results.js';
import { CommandError, CommandErrorCodes, failure, type CommandResult } from './answers.js';
import type { CommandContext, Handlers } from './family.js';
import { catalogHandlers, catalogSchemas } from './families/catalog.js';
import { deviceHandlers, deviceSchemas } from './families/device.js';
import { dexHandlers, dexSchemas } from './families/dex.js';
import { orderHandlers, orderSchemas } from './families/orders.js';
import { testVendHandlers, testVendSchemas } from './families/test-vend.js';

/** Every command's body, family by family; the order is the one `known: …` lists them in. */
const schemas = { ...deviceSchemas, ...orderSchemas, ...testVendSchemas, ...catalogSchemas, ...dexSchemas } as const;

export type CommandName = keyof typeof schemas;

export const COMMAND_NAMES = Object.keys(schemas) as CommandName[];

export function isCommand(name: string): name is CommandName {
  return Object.hasOwn(schemas, name);
}

export function unknownCommand(name: string): string {
  return `unknown command "${name}"; known: ${COMMAND_NAMES.join(', ')}`;
}

/** The body's problems as `path: message` lines (every one). */
export function bodyProblems(name: CommandName, body: Record<string, unknown>): string[] {
  const checked = schemas[name].safeParse(body);
  const problems = checked.success ? [] : checked.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`);
  if ('orderId' in body && 'order' in schemas[name].shape)
    problems.push(
      'orderId: a local order number is given again by a restored or replaced database; name the order by its reference in "order" (<device>-<db>-<order>-<nonce>, as vendgate orders and the alarms show it)',
    );
  return problems;
}

/** Runs a command whose body is valid: its answer, or its refusal with a stable code (never throws). */
export type RunCommand = (
  name: CommandName,
  body: Record<string, unknown>,
  id: string | number | null,
  by: string,
  orderId?: number | null,
) => Promise<CommandResult>;

/** The table the dispatcher reads: each family's handlers, built once for this device. */
export function createCommandTable(ctx: CommandContext, logger: Logger): RunCommand {
  const handlers: Handlers<typeof schemas> = {
    ...deviceHandlers(ctx),
    ...orderHandlers(ctx),
    ...testVendHandlers(ctx),
    ...catalogHandlers(ctx),
    ...dexHandlers(ctx),
  };

  async function run<N extends CommandName>(name: N, body: Record<string, unknown>, by: string, orderId: number | null) {
    // One handler of the table, looked up by a name TypeScript cannot correlate with its body: each is typed where it is written.
    const handler = handlers[name] as (body: unknown, by: string, orderId: number | null) => CommandResults[N] | Promise<CommandResults[N]>;
    return handler(schemas[name].parse(body), by, orderId);
  }

  return async (name, body, id, by, orderId = null) => {
    try {
      const result = await run(name, body, by, orderId);
      return { requestId: id, ok: true, result: result ?? null };
    } catch (err) {
      if (err instanceof VendgateError) return failure(id, err.code, err.message, err.details);
      if (err instanceof CommandError) return failure(id, err.code, err.message);
      logger.error({ err, command: name }, 'command failed unexpectedly');
      return failure(id, CommandErrorCodes.COMMAND_FAILED, err instanceof Error ? err.message : String(err));
    }
  };
}
