import { z } from 'zod';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { DeviceControl } from './types.js';

/**
 * Codes of command results that are not errors of the money path. Stable: operators' scripts match
 * on them. (To be listed with the others in util/errors.ts and docs/errors.md.)
 */
export const CommandErrorCodes = {
  BAD_REQUEST: ErrorCodes.BAD_REQUEST,
  UNKNOWN_COMMAND: 'VG_ERR_UNKNOWN_COMMAND',
  REMOTE_VEND_DISABLED: 'VG_ERR_REMOTE_VEND_DISABLED',
  COMMAND_FAILED: 'VG_ERR_COMMAND_FAILED',
} as const;

export type CommandResult =
  | { requestId: string | number | null; ok: true; result: unknown }
  | { requestId: string | number | null; ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

const requestId = z.union([z.string().min(1).max(128), z.number().int()]);

const schemas = {
  ping: z.object({ requestId }).strict(),
  out_of_service: z.object({ requestId, on: z.boolean(), reason: z.string().min(1).max(200).optional() }).strict(),
  selftest: z.object({ requestId }).strict(),
  resolve: z.object({ requestId, orderId: z.number().int().positive(), vended: z.boolean() }).strict(),
  refund: z.object({ requestId, orderId: z.number().int().positive() }).strict(),
  test_vend: z.object({ requestId, slot: z.string().min(1).max(16).nullable().default(null) }).strict(),
  // The document itself is checked by the catalog's own schema, so its errors name its own paths.
  catalog: z
    .object({ requestId, catalog: z.unknown().refine((value) => value !== undefined, 'the catalog document {version, items} is missing') })
    .strict(),
  catalog_rollback: z.object({ requestId }).strict(),
  refill: z.object({ requestId, slot: z.string().min(1).max(16), count: z.number().int().min(0).max(10_000) }).strict(),
  clear_jam: z.object({ requestId, slot: z.string().min(1).max(16) }).strict(),
} as const;

type CommandName = keyof typeof schemas;
export const COMMAND_NAMES = Object.keys(schemas) as CommandName[];

/** How many recent commands are remembered: a QoS 1 redelivery gets the first answer again, not a second run. */
const REMEMBERED_REQUESTS = 200;

export interface CommandHandler {
  /** Handles one message on `cmd/<name>`; never throws. Resolves once the result was handed on. */
  handle(name: string, payload: Buffer, retained: boolean): Promise<void>;
}

export function createCommandHandler(deps: {
  control: DeviceControl;
  clock: Clock;
  logger: Logger;
  allowRemoteVend: boolean;
  /** Publishes a result on `cmd/<name>/result` (not retained). */
  reply(name: string, result: CommandResult): void;
  /** A selftest run by command also updates the retained `selftest` topic (with its report). */
  onSelftest?(report: unknown): void;
}): CommandHandler {
  const { control, clock, logger, reply } = deps;
  const recent = new Map<string, Promise<CommandResult>>();

  async function run(name: CommandName, body: Record<string, unknown>): Promise<unknown> {
    switch (name) {
      case 'ping':
        return { pong: true, at: new Date(clock.now()).toISOString() };
      case 'out_of_service': {
        const { on, reason } = schemas.out_of_service.parse(body);
        control.setOutOfService(on, reason ?? 'set over MQTT');
        return control.state();
      }
      case 'selftest': {
        const outcome = await control.runSelftest();
        deps.onSelftest?.(outcome.report);
        return outcome;
      }
      case 'resolve': {
        const { orderId, vended } = schemas.resolve.parse(body);
        return control.resolve(orderId, vended);
      }
      case 'refund':
        return control.refund(schemas.refund.parse(body).orderId);
      case 'test_vend': {
        const { slot } = schemas.test_vend.parse(body);
        if (!deps.allowRemoteVend) {
          throw new CommandError(
            CommandErrorCodes.REMOTE_VEND_DISABLED,
            'remote vend is disabled on this device; set mqtt.allowRemoteVend: true in its configuration to allow test_vend',
          );
        }
        return control.testVend(slot);
      }
      case 'catalog':
        return catalogControl().apply(schemas.catalog.parse(body).catalog);
      case 'catalog_rollback':
        return catalogControl().rollback();
      case 'refill': {
        const { slot, count } = schemas.refill.parse(body);
        return catalogControl().refill(slot, count);
      }
      case 'clear_jam':
        return catalogControl().clearJam(schemas.clear_jam.parse(body).slot);
    }
  }

  function catalogControl() {
    if (!control.catalog)
      throw new CommandError(CommandErrorCodes.UNKNOWN_COMMAND, 'this device keeps no catalog (turnstile or no catalog control)');
    return control.catalog;
  }

  async function execute(name: string, payload: Buffer): Promise<CommandResult> {
    let body: unknown;
    try {
      body = JSON.parse(payload.toString('utf8'));
    } catch {
      return failure(null, CommandErrorCodes.BAD_REQUEST, 'the body is not JSON; send an object such as {"requestId":"r1"}');
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      return failure(null, CommandErrorCodes.BAD_REQUEST, 'the body must be a JSON object with a requestId');
    }
    const record = body as Record<string, unknown>;
    const id = requestId.safeParse(record.requestId).success ? (record.requestId as string | number) : null;
    if (!isCommand(name)) {
      return failure(id, CommandErrorCodes.UNKNOWN_COMMAND, `unknown command "${name}"; known: ${COMMAND_NAMES.join(', ')}`);
    }
    const checked = schemas[name].safeParse(record);
    if (!checked.success) {
      const problems = checked.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`);
      return failure(id, CommandErrorCodes.BAD_REQUEST, `invalid ${name} command: ${problems.join('; ')}`);
    }
    try {
      const result = await run(name, record);
      return { requestId: id, ok: true, result: result ?? null };
    } catch (err) {
      if (err instanceof VendgateError) return failure(id, err.code, err.message, err.details);
      if (err instanceof CommandError) return failure(id, err.code, err.message);
      logger.error({ err, command: name }, 'command failed unexpectedly');
      return failure(id, CommandErrorCodes.COMMAND_FAILED, err instanceof Error ? err.message : String(err));
    }
  }

  return {
    async handle(name, payload, retained) {
      // A retained command would run again on every reconnect; an empty payload is someone clearing one.
      if (retained || payload.length === 0) {
        if (payload.length > 0) logger.warn({ command: name }, 'ignored a retained command; publish commands without the retain flag');
        return;
      }
      const key = requestKey(name, payload);
      let pending = key ? recent.get(key) : undefined;
      const repeat = pending !== undefined;
      if (!pending) {
        pending = execute(name, payload);
        if (key) {
          recent.set(key, pending);
          if (recent.size > REMEMBERED_REQUESTS) recent.delete(recent.keys().next().value!);
        }
      }
      const result = await pending;
      logger.info(
        { command: name, requestId: result.requestId, ok: result.ok, code: result.ok ? undefined : result.error.code, repeat },
        'command handled',
      );
      reply(name, result);
    },
  };
}

class CommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}

function isCommand(name: string): name is CommandName {
  return Object.hasOwn(schemas, name);
}

function failure(id: string | number | null, code: string, message: string, details?: Record<string, unknown>): CommandResult {
  return { requestId: id, ok: false, error: { code, message, ...(details ? { details } : {}) } };
}

/** Exact repeats (a QoS 1 redelivery carries the same bytes) share one execution. */
function requestKey(name: string, payload: Buffer): string | null {
  return payload.length <= 4_096 ? `${name}\u0000${payload.toString('utf8')}` : null;
}
