import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { errorMessage } from '../../util/errors.js';
import type { ActuatorSettings } from '../../settings/sections/actuator.js';
import type { HardwareBus } from '../bus.js';
import type { Actuator, VendOutcome, VendRequest } from '../types.js';
import { SerialLineDownError, type SerialConnection } from './connection.js';
import { waitForLine } from './line-waiter.js';
import { compilePattern, fillCommand, preview } from './templates.js';

type SerialSettings = ActuatorSettings['serial'];
type Status = 'vended' | 'not_vended' | 'unknown';

export interface LineSerialDeps {
  clock: Clock;
  logger: Logger;
  bus: HardwareBus;
  connection: SerialConnection;
}

/**
 * Serial `line` profile: one text command per vend, one answer line. The rule that matters:
 * `failed` only when the machine said so or the command never left; a command sent and not
 * answered is `unknown` unless the status command can settle it.
 */
export function createLineSerialActuator(deps: LineSerialDeps, settings: SerialSettings): Actuator {
  const log = deps.logger;
  const conn = deps.connection;
  const timeoutMs = settings.timeoutMs;
  let started = false;
  let busy = false;
  let offLine: (() => void) | null = null;
  let offState: (() => void) | null = null;
  /** Lines are logged once: by the vend waiting for them, or here when nobody waits. */
  let waiting = 0;

  const ignored = (line: string) => log.warn({ line: preview(line) }, 'unrecognised line from the machine ignored');

  /** Asks the machine about the last vend. Spends at most `budgetMs`, waiting for the line included. */
  async function askStatus(request: VendRequest, budgetMs: number, acceptVendAnswer: boolean): Promise<Status> {
    if (!settings.statusCommand) return 'unknown';
    const deadline = deps.clock.now() + budgetMs;
    if (!(await conn.waitUntilUp(budgetMs))) return 'unknown';
    const vended = compilePattern(settings.statusVendedPattern, request);
    const notVended = compilePattern(settings.statusNotVendedPattern, request);
    const ok = compilePattern(settings.okPattern, request);
    const error = compilePattern(settings.errorPattern, request);
    const waiter = waitForLine<Status>(
      conn,
      (line) => {
        if (vended.test(line)) return 'vended';
        if (notVended.test(line)) return 'not_vended';
        // A late answer to the vend command itself settles it just as well.
        if (acceptVendAnswer && ok.test(line)) return 'vended';
        if (acceptVendAnswer && error.test(line)) return 'not_vended';
        return null;
      },
      ignored,
    );
    waiting++;
    try {
      await conn.write(fillCommand(settings.statusCommand, request));
      const answer = await waiter.arm(Math.max(0, deadline - deps.clock.now()));
      if (answer.kind === 'match') {
        log.info({ orderId: request.orderId, line: preview(answer.line), status: answer.value }, 'machine status answer');
        return answer.value;
      }
      log.warn({ orderId: request.orderId, why: answer.kind }, 'no answer to the status command');
      return 'unknown';
    } catch (err) {
      waiter.cancel();
      log.warn({ err, orderId: request.orderId }, 'status command could not be sent');
      return 'unknown';
    } finally {
      waiting--;
    }
  }

  async function settleUnanswered(request: VendRequest, why: string): Promise<VendOutcome> {
    if (!settings.statusCommand) {
      return {
        result: 'unknown',
        detail: `${why}: the vend command was sent and the machine may or may not have vended (configure actuator.serial.statusCommand to let vendgate ask)`,
      };
    }
    const status = await askStatus(request, timeoutMs, true);
    if (status === 'vended') return { result: 'vended', detail: `${why}; the machine's status says vended` };
    if (status === 'not_vended') return { result: 'failed', reason: `${why}; the machine's status says not vended`, slotFault: true };
    return { result: 'unknown', detail: `${why}, and the status query got no usable answer: the machine may or may not have vended` };
  }

  async function vend(request: VendRequest): Promise<VendOutcome> {
    if (!conn.up && !(await conn.waitUntilUp(timeoutMs))) {
      return { result: 'failed', reason: `serial line down: nothing was sent (waited ${timeoutMs} ms; ${conn.detail})` };
    }
    const ok = compilePattern(settings.okPattern, request);
    const error = compilePattern(settings.errorPattern, request);
    const waiter = waitForLine<'ok' | 'error'>(conn, (line) => (ok.test(line) ? 'ok' : error.test(line) ? 'error' : null), ignored);
    const command = fillCommand(settings.vendCommand, request);
    try {
      await conn.write(command);
    } catch (err) {
      waiter.cancel();
      if (err instanceof SerialLineDownError) return { result: 'failed', reason: 'serial line down: nothing was sent' };
      // The OS may have taken part of it: the machine might act on it.
      log.error({ err, orderId: request.orderId }, 'vend command write failed');
      return settleUnanswered(request, `writing the vend command failed (${errorMessage(err)})`);
    }
    log.info({ orderId: request.orderId, slot: request.slot, command: preview(command.trim()) }, 'vend command sent');
    const answer = await waiter.arm(timeoutMs);
    if (answer.kind === 'match' && answer.value === 'ok') return { result: 'vended', detail: preview(answer.line) };
    if (answer.kind === 'match') return { result: 'failed', reason: `machine answered "${preview(answer.line)}"`, slotFault: true };
    const why =
      answer.kind === 'down'
        ? 'the serial line went down after the vend command was sent'
        : `no answer within ${timeoutMs} ms after the vend command was sent`;
    log.warn({ orderId: request.orderId, why }, 'vend command unanswered');
    return settleUnanswered(request, why);
  }

  return {
    kind: 'serial',
    async start() {
      if (started) return;
      started = true;
      offLine = conn.onLine((line) => {
        if (waiting === 0) ignored(line);
      });
      offState = conn.onState((up, detail) => deps.bus.emit({ type: 'line', up, detail }));
      await conn.start();
    },
    async fire(request) {
      if (!started) return { result: 'failed', reason: 'serial actuator not started' };
      if (busy) return { result: 'failed', reason: 'another vend is still running on the serial line: nothing was sent' };
      busy = true;
      waiting++;
      try {
        return await vend(request);
      } finally {
        waiting--;
        busy = false;
      }
    },
    async queryOutcome(request) {
      if (!started || busy) return 'unknown';
      busy = true;
      try {
        return await askStatus(request, timeoutMs, false);
      } finally {
        busy = false;
      }
    },
    health() {
      if (!started) return { ok: false, detail: 'serial actuator not started' };
      return { ok: conn.up, detail: conn.detail };
    },
    async stop() {
      if (!started) return;
      started = false;
      offLine?.();
      offState?.();
      await conn.stop();
    },
  };
}
