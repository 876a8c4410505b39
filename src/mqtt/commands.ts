import { z } from 'zod';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { CommandAudit, DeviceControl } from './types.js';
import { EnvelopeErrorCodes, SIGNED_COMMANDS, isEnvelope, verifyCommand, type CommandAuthSettings } from './command-envelope.js';
import type { CommandRecord } from './command-record.js';
import { createCommandTally, type UnverifiedSummary } from './command-tally.js';
import type { CommandResults } from './command-results.js';
import { createDexCommands, dexSchemas } from './dex-commands.js';

/**
 * Codes of command results that are not errors of the money path. Stable: operators' scripts match
 * on them. (To be listed with the others in util/errors.ts and docs/errors.md.)
 */
export const CommandErrorCodes = {
  BAD_REQUEST: ErrorCodes.BAD_REQUEST,
  UNKNOWN_COMMAND: 'VG_ERR_UNKNOWN_COMMAND',
  REMOTE_VEND_DISABLED: 'VG_ERR_REMOTE_VEND_DISABLED',
  COMMAND_FAILED: 'VG_ERR_COMMAND_FAILED',
  /** The request id was used before: the first answer is repeated, nothing runs again. */
  REPLAYED: ErrorCodes.COMMAND_REPLAYED,
  ...EnvelopeErrorCodes,
} as const;

/** An answer on `cmd/<name>/result` (before the device signs it); `result` is the command's row of COMMAND_RESULTS. */
export type CommandResult =
  | { requestId: string | number | null; ok: true; result: CommandResults[CommandName] | null; replay?: true }
  | {
      requestId: string | number | null;
      ok: false;
      error: { code: string; message: string; details?: Record<string, unknown> };
      replay?: true;
    };

const requestId = z.union([z.string().min(1).max(128), z.number().int()]);
/**
 * An order as a signed command names it: its global reference `<device>-<db>-<order>-<nonce>`
 * (`orderReference`), never the local order number, which a restored or replaced database gives again.
 */
const order = z.string().min(3).max(200);

const schemas = {
  ping: z.object({ requestId }).strict(),
  out_of_service: z.object({ requestId, on: z.boolean(), reason: z.string().min(1).max(200).optional() }).strict(),
  selftest: z.object({ requestId }).strict(),
  resolve: z.object({ requestId, order, vended: z.boolean() }).strict(),
  refund: z.object({ requestId, order }).strict(),
  // The case is an alarm's name (orphan_invoice/pi_…); ledger/settle.ts checks it and the outcome.
  settle: z.object({ requestId, case: z.string().min(3).max(200), outcome: z.string().min(1).max(32) }).strict(),
  test_vend: z.object({ requestId, slot: z.string().min(1).max(16).nullable().default(null) }).strict(),
  // The document itself is checked by the catalog's own schema, so its errors name its own paths.
  catalog: z
    .object({ requestId, catalog: z.unknown().refine((value) => value !== undefined, 'the catalog document {version, items} is missing') })
    .strict(),
  catalog_rollback: z.object({ requestId }).strict(),
  refill: z.object({ requestId, slot: z.string().min(1).max(16), count: z.number().int().min(0).max(10_000) }).strict(),
  clear_jam: z.object({ requestId, slot: z.string().min(1).max(16) }).strict(),
  // cmd/dex (read-only) and cmd/visit (signed): src/mqtt/dex-commands.ts.
  ...dexSchemas,
} as const;

type CommandName = keyof typeof schemas;

/** One function per command, from its parsed body to its typed answer. */
type Handlers = {
  [N in CommandName]: (
    body: z.output<(typeof schemas)[N]>,
    by: string,
    orderId: number | null,
  ) => CommandResults[N] | Promise<CommandResults[N]>;
};

/** Who gave a command, as far as it can be believed: its audit record besides the outcome. */
type Origin = Pick<CommandAudit, 'requestId' | 'keyId' | 'verified'> & { orderId?: number };

/** A command's answer and who gave it: `handle` writes one audit record per message from both. */
interface Handled {
  result: CommandResult;
  origin: Origin;
}

type SelftestAnswer = CommandResults['selftest'];

const UNVERIFIED: Origin = { requestId: null, keyId: null, verified: false };
export const COMMAND_NAMES = Object.keys(schemas) as CommandName[];

/** How many recent commands are remembered: a QoS 1 redelivery gets the first answer again, not a second run. */
const REMEMBERED_REQUESTS = 200;

export interface CommandHandler {
  /** Handles one message on `cmd/<name>`; never throws. Resolves once the result was handed on. */
  handle(name: string, payload: Buffer, retained: boolean): Promise<void>;
  /** The messages no key vouched for since the last call (counted, never written each), or null. */
  takeUnverifiedSummary(): UnverifiedSummary | null;
}

/**
 * A selftest finished this recently answers a new request (unsigned, so anyone's) with its report:
 * the checks call the provider and write the stored result, which a flood must not multiply.
 */
export const SELFTEST_REUSE_MS = 10_000;

export function createCommandHandler(deps: {
  control: DeviceControl;
  clock: Clock;
  logger: Logger;
  allowRemoteVend: boolean;
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
  /** A selftest run by command also updates the retained `selftest` topic (with its report). */
  onSelftest?(report: unknown): void;
}): CommandHandler {
  const { control, clock, logger, reply } = deps;
  const recent = new Map<string, Promise<Handled>>();
  /** Verified commands still running, by request id: a redelivery meanwhile waits for the same answer. */
  const running = new Map<string, { digest: string; result: Promise<CommandResult> }>();
  const unverified = createCommandTally(COMMAND_NAMES);
  const dexCommands = createDexCommands({ clock });
  /** One selftest at a time: requests meanwhile (and just after) share its answer. */
  let selftest: { promise: Promise<SelftestAnswer>; finishedAt: number | null } | null = null;

  function selftestOnce(): Promise<SelftestAnswer> {
    if (selftest && (selftest.finishedAt === null || clock.now() - selftest.finishedAt < SELFTEST_REUSE_MS))
      return selftest.promise.then((outcome) => ({ ...outcome, shared: true }));
    const current: { promise: Promise<SelftestAnswer>; finishedAt: number | null } = {
      promise: Promise.resolve({ ok: false, report: null }),
      finishedAt: null,
    };
    current.promise = (async () => {
      try {
        const outcome = await control.runSelftest();
        deps.onSelftest?.(outcome.report);
        return outcome;
      } finally {
        current.finishedAt = clock.now();
      }
    })();
    selftest = current;
    return current.promise;
  }
  /**
   * What each command does once its body is valid (`by`: who gave it, as the order history and the
   * catalog's source record it). Each answers its own row of COMMAND_RESULTS (command-results.ts):
   * a command without a row there, or answering another shape, does not compile.
   */
  const handlers: Handlers = {
    ping: () => ({ pong: true, at: new Date(clock.now()).toISOString() }),
    out_of_service: ({ on, reason }, by) => {
      control.setOutOfService(on, reason ?? 'set over MQTT', by);
      return control.state();
    },
    selftest: () => selftestOnce(),
    resolve: ({ vended }, by, orderId) => control.resolve(named(orderId), vended, by),
    refund: (_body, by, orderId) => control.refund(named(orderId), by),
    settle: (body, by) => {
      if (!control.settle) throw new CommandError(CommandErrorCodes.UNKNOWN_COMMAND, 'this device cannot settle cases');
      return control.settle(body.case, body.outcome, by);
    },
    test_vend: ({ slot }, by) => {
      if (!deps.allowRemoteVend) {
        throw new CommandError(
          CommandErrorCodes.REMOTE_VEND_DISABLED,
          'remote vend is disabled on this device; set mqtt.allowRemoteVend: true in its configuration to allow test_vend',
        );
      }
      return control.testVend(slot, by);
    },
    catalog: ({ catalog }, by) => catalogControl().apply(catalog, by),
    catalog_rollback: (_body, by) => catalogControl().rollback(by),
    refill: ({ slot, count }, by) => catalogControl().refill(slot, count, by),
    clear_jam: ({ slot }, by) => catalogControl().clearJam(slot, by),
    // cmd/dex (read-only) and cmd/visit (signed): src/mqtt/dex-commands.ts.
    // dex-commands.ts answers `unknown` for now: its rows in COMMAND_RESULTS say what it sends.
    dex: (body, by) => dexCommands.run('dex', body, dexControl(), by) as CommandResults['dex'],
    visit: (body, by) => dexCommands.run('visit', body, dexControl(), by) as CommandResults['visit'],
  };

  async function run<N extends CommandName>(name: N, body: Record<string, unknown>, by: string, orderId: number | null) {
    const handler = handlers[name] as (body: unknown, by: string, orderId: number | null) => CommandResults[N] | Promise<CommandResults[N]>;
    return handler(schemas[name].parse(body), by, orderId);
  }

  function named(orderId: number | null): number {
    if (orderId === null) throw new CommandError(CommandErrorCodes.BAD_REQUEST, 'order: the order reference is missing');
    return orderId;
  }

  function dexControl() {
    if (!control.dex) throw new CommandError(CommandErrorCodes.UNKNOWN_COMMAND, 'this device keeps no audit (no dex control)');
    return control.dex;
  }

  function catalogControl() {
    if (!control.catalog)
      throw new CommandError(CommandErrorCodes.UNKNOWN_COMMAND, 'this device keeps no catalog (turnstile or no catalog control)');
    return control.catalog;
  }

  /** The body's problems as `path: message` lines (every one). */
  function bodyProblems(name: CommandName, body: Record<string, unknown>): string[] {
    const checked = schemas[name].safeParse(body);
    const problems = checked.success ? [] : checked.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`);
    if ('orderId' in body && 'order' in schemas[name].shape)
      problems.push(
        'orderId: a local order number is given again by a restored or replaced database; name the order by its reference in "order" (<device>-<db>-<order>-<nonce>, as vendgate orders and the alarms show it)',
      );
    return problems;
  }

  async function runChecked(
    name: CommandName,
    body: Record<string, unknown>,
    id: string | number | null,
    by: string,
    orderId: number | null = null,
  ): Promise<CommandResult> {
    try {
      const result = await run(name, body, by, orderId);
      return { requestId: id, ok: true, result: result ?? null };
    } catch (err) {
      if (err instanceof VendgateError) return failure(id, err.code, err.message, err.details);
      if (err instanceof CommandError) return failure(id, err.code, err.message);
      logger.error({ err, command: name }, 'command failed unexpectedly');
      return failure(id, CommandErrorCodes.COMMAND_FAILED, err instanceof Error ? err.message : String(err));
    }
  }

  function audit(entry: CommandAudit): void {
    try {
      control.audit(entry);
    } catch (err) {
      logger.error({ err, command: entry.command, requestId: entry.requestId }, 'could not write the audit record of a command');
    }
  }

  async function execute(name: string, payload: Buffer): Promise<Handled> {
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
    if (isEnvelope(record)) return executeSigned(name, record);
    const id = requestId.safeParse(record.requestId).success ? (record.requestId as string | number) : null;
    const origin: Origin = { ...UNVERIFIED, requestId: id === null ? null : String(id) };
    if (!isCommand(name)) {
      const result = failure(id, CommandErrorCodes.UNKNOWN_COMMAND, `unknown command "${name}"; known: ${COMMAND_NAMES.join(', ')}`);
      return { result, origin };
    }
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
    return { result: await runChecked(name, record, id, 'mqtt'), origin };
  }

  async function executeSigned(name: string, envelope: Record<string, unknown>): Promise<Handled> {
    const verified = verifyCommand(envelope, {
      command: name,
      deviceId: deps.deviceId,
      now: clock.now(),
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
      const found = control.orderByReference(body.order);
      if ('code' in found) return { result: failure(id, found.code, `command refused, nothing done: ${found.message}`), origin: unnamed };
      orderId = found.orderId;
    }
    const base: Origin = { ...unnamed, ...(orderId !== null ? { orderId } : {}) };

    const inFlight = running.get(id);
    if (inFlight && inFlight.digest === verified.digest) return { result: { ...(await inFlight.result), replay: true }, origin: base };
    let claim: ReturnType<CommandRecord['claim']>;
    try {
      claim = deps.record.claim(name, verified, clock.now(), orderId);
    } catch (err) {
      // Not recorded means not run: a command whose request id could be forgotten must not move money.
      logger.error({ err, command: name, requestId: id }, 'could not record a signed command; it did not run');
      const reason = err instanceof Error ? err.message : String(err);
      const result = failure(
        id,
        ErrorCodes.STORAGE,
        `command not run, nothing done: the device could not record request "${id}" (${reason}); send it again once its storage works`,
      );
      return { result, origin: base };
    }
    if (!claim.fresh) {
      const row = claim.row;
      let answer: CommandResult;
      if (row.digest !== verified.digest) {
        answer = failure(
          id,
          CommandErrorCodes.REPLAYED,
          `command refused, nothing done: request id "${id}" was used by another command (${row.command}, key ${row.key_id}) at ${new Date(row.received_at).toISOString()}; every command needs a new request id`,
        );
      } else if (row.outcome === null) {
        answer = failure(
          id,
          CommandErrorCodes.REPLAYED,
          `request "${id}" was received at ${new Date(row.received_at).toISOString()} and the service stopped before it answered; it does not run again: check the order history or the device state`,
        );
      } else {
        answer = { ...(JSON.parse(row.outcome) as CommandResult), replay: true };
      }
      return { result: { ...answer, replay: true }, origin: base };
    }
    const result = runChecked(name, body, id, `mqtt (key ${verified.keyId}, request ${id})`, orderId);
    running.set(id, { digest: verified.digest, result });
    try {
      const answer = await result;
      try {
        deps.record.finish(id, answer, clock.now());
      } catch (err) {
        logger.error(
          { err, command: name, requestId: id },
          'could not store the answer of a command (a replay will say so, and not run it)',
        );
      }
      return { result: answer, origin: base };
    } finally {
      running.delete(id);
    }
  }

  async function handleOne(name: string, payload: Buffer): Promise<void> {
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

function unknownCommand(name: string): string {
  return `unknown command "${name}"; known: ${COMMAND_NAMES.join(', ')}`;
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
