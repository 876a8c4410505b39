import type { Logger } from '../../util/logger.js';
import { errorMessage } from '../../util/errors.js';
import type { ActuatorSettings } from '../../settings/sections/actuator.js';
import type { HardwareBus } from '../bus.js';
import type { Actuator, VendOutcome, VendRequest } from '../types.js';
import { SerialLineDownError, type SerialConnection } from './connection.js';
import { waitForLine } from './line-waiter.js';
import { preview } from './templates.js';

type SerialSettings = ActuatorSettings['serial'];

export interface MdbSerialDeps {
  logger: Logger;
  bus: HardwareBus;
  connection: SerialConnection;
  /** Items the machine may ask for (catalog slots); anything else is denied. */
  knownItems: { has(item: string): boolean };
  /** Smallest currency units per 1.00 of the machine's decimal amount (from device.currency unless set). */
  scale: number;
}

interface Session {
  item: string;
  amount: number;
  /** The machine's own decimal text, echoed back in C,VEND so the approval matches to the cent. */
  amountText: string;
  timer: ReturnType<typeof setTimeout>;
}

/** Commands end with LF (Qibixx-style boards accept LF; CR LF is also read back fine). */
const EOL = '\n';
const VEND_REQUEST = /^c,STATUS,VEND,([^,]*),([^,]*)$/;
const RESET = /^c,STATUS,(INACTIVE|OFFLINE)\b/;
const CANCEL = /^c,(STATUS,)?(VEND,)?CANCEL/;

/** Converts the machine's decimal amount into smallest units, or explains why it cannot. */
export function parseMdbAmount(text: string, scale: number): number | string {
  if (!/^\d{1,9}(\.\d{1,6})?$/.test(text)) return `amount "${preview(text, 20)}" is not a positive decimal`;
  const units = Number(text) * scale;
  const rounded = Math.round(units);
  if (Math.abs(units - rounded) > 1e-6) return `amount ${text} is finer than the currency's smallest unit (scale ${scale})`;
  if (rounded <= 0) return `amount ${text} is not positive`;
  return rounded;
}

/**
 * MDB cashless device through a Pi MDB board's text protocol. The machine selects first
 * (`c,STATUS,VEND,<amount>,<item>` → a `vend_request` event); after payment fire() approves with
 * `C,VEND,<amount>`; `denySession()` or our own session timeout sends `C,STOP`.
 */
export function createMdbSerialActuator(deps: MdbSerialDeps, settings: SerialSettings): Actuator {
  const log = deps.logger;
  const conn = deps.connection;
  const mdb = settings.mdb;
  let started = false;
  let busy = false;
  let enabled = false;
  let session: Session | null = null;
  /** While fire() waits for the result, lines belong to it. */
  let approving = false;
  /** A reset seen (possibly mid-approval): enable and settings must be sent again. */
  let reenableAfterVend = false;
  const offs: (() => void)[] = [];

  function reenableIfNeeded(): void {
    if (!reenableAfterVend || approving) return;
    reenableAfterVend = false;
    void enable('reset');
  }

  async function send(command: string): Promise<void> {
    log.debug({ command }, 'mdb command');
    await conn.write(command + EOL);
  }

  /** Disable, settings (volatile on the board), enable: after every open and every reset. */
  async function enable(reason: string): Promise<void> {
    try {
      if (mdb.setconf.length > 0) {
        await send('C,0');
        for (const line of mdb.setconf) await send(line);
      }
      await send('C,1');
      log.info({ reason, settings: mdb.setconf.length }, 'mdb reader enable sent');
    } catch (err) {
      log.warn({ err: errorMessage(err), reason }, 'mdb enable could not be sent');
    }
  }

  function endSession(): Session | null {
    const ended = session;
    if (ended) clearTimeout(ended.timer);
    session = null;
    return ended;
  }

  function cancelSession(why: string): void {
    const ended = endSession();
    if (!ended) return;
    log.info({ item: ended.item, amount: ended.amount, why }, 'mdb session canceled');
    deps.bus.emit({ type: 'session_cancel' });
  }

  function deny(why: string, line: string): void {
    log.warn({ line: preview(line), why }, 'mdb vend request denied');
    send('C,STOP').catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'C,STOP could not be sent'));
  }

  function onVendRequest(line: string, amountText: string, item: string): void {
    if (approving) {
      log.warn({ line: preview(line) }, 'mdb vend request while a vend is being approved: ignored');
      return;
    }
    const amount = parseMdbAmount(amountText, deps.scale);
    if (typeof amount === 'string') return deny(amount, line);
    if (!deps.knownItems.has(item)) return deny(`item "${preview(item, 20)}" is not in device.catalog`, line);
    if (session) log.warn({ previous: session.item }, 'new mdb vend request replaces an unanswered one');
    endSession();
    const timer = setTimeout(() => {
      if (session?.timer !== timer) return;
      log.warn({ item, sessionTimeoutSec: mdb.sessionTimeoutSec }, 'mdb session not paid in time: denied');
      send('C,STOP').catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'C,STOP could not be sent'));
      cancelSession('session timeout');
    }, mdb.sessionTimeoutSec * 1_000);
    session = { item, amount, amountText, timer };
    log.info({ item, amount }, 'mdb vend request');
    deps.bus.emit({ type: 'vend_request', item, amount });
  }

  function onLine(line: string): void {
    const request = VEND_REQUEST.exec(line);
    if (request) return onVendRequest(line, request[1]!, request[2]!);
    if (RESET.test(line)) {
      enabled = false;
      // INACTIVE is the state after the VMC resets us: the board forgot its settings too.
      if (line.startsWith('c,STATUS,INACTIVE')) reenableAfterVend = true;
      if (approving) return; // the approval's waiter reports it; re-enable once it is over
      cancelSession('machine or board reset');
      reenableIfNeeded();
      return;
    }
    if (line === 'c,STATUS,ENABLED') {
      enabled = true;
      // Back to Enabled without our approval: the VMC ended the session (customer or its timeout).
      if (!approving) cancelSession('machine ended the session');
      return;
    }
    if (line === 'c,STATUS,DISABLED') {
      enabled = false;
      if (!approving) cancelSession('machine disabled the reader');
      return;
    }
    if (CANCEL.test(line)) {
      if (!approving) cancelSession('machine canceled');
      return;
    }
    if (approving) return; // fire()'s waiter classifies these
    if (line === 'c,STATUS,IDLE' || line.startsWith('c,SET') || line.startsWith('c,VEND,SUCCESS')) {
      log.debug({ line }, 'mdb status');
      return;
    }
    log.warn({ line: preview(line) }, 'unrecognised line from the MDB board ignored');
  }

  async function approve(request: VendRequest, current: Session): Promise<VendOutcome> {
    if (!conn.up && !(await conn.waitUntilUp(settings.timeoutMs))) {
      return { result: 'failed', reason: `serial line down: the approval was not sent (${conn.detail})` };
    }
    if (session !== current)
      return { result: 'failed', reason: 'the machine ended the vend session before the approval: nothing was sent' };
    type Answer = 'success' | 'error' | 'ended';
    const waiter = waitForLine<Answer>(
      conn,
      (line) => {
        if (line.startsWith('c,VEND,SUCCESS')) return 'success';
        if (line.startsWith('c,ERR')) return 'error';
        if (RESET.test(line) || line === 'c,STATUS,ENABLED' || line === 'c,STATUS,DISABLED' || CANCEL.test(line)) return 'ended';
        return null;
      },
      (line) => {
        if (line !== 'c,STATUS,IDLE') log.warn({ line: preview(line) }, 'unrecognised line during mdb vend ignored');
      },
    );
    approving = true;
    clearTimeout(current.timer);
    try {
      try {
        await send(`C,VEND,${current.amountText}`);
      } catch (err) {
        waiter.cancel();
        if (err instanceof SerialLineDownError) return { result: 'failed', reason: 'serial line down: the approval was not sent' };
        return { result: 'unknown', detail: `writing C,VEND failed (${errorMessage(err)}): the board may have approved the vend` };
      }
      log.info({ orderId: request.orderId, item: current.item, amount: current.amount }, 'mdb vend approved');
      const answer = await waiter.arm(settings.timeoutMs);
      if (answer.kind === 'match' && answer.value === 'success') return { result: 'vended', detail: preview(answer.line) };
      if (answer.kind === 'match' && answer.value === 'error')
        return { result: 'failed', reason: `machine reported "${preview(answer.line)}"`, slotFault: true };
      if (answer.kind === 'match')
        return { result: 'unknown', detail: `the session ended ("${preview(answer.line)}") after the approval without a vend result` };
      if (answer.kind === 'down') return { result: 'unknown', detail: 'the serial line went down after the approval was sent' };
      return { result: 'unknown', detail: `no vend result within ${settings.timeoutMs} ms after the approval` };
    } finally {
      approving = false;
      endSession();
      reenableIfNeeded();
    }
  }

  return {
    kind: 'serial',
    async start() {
      if (started) return;
      started = true;
      offs.push(conn.onLine(onLine));
      offs.push(
        conn.onState((up, detail) => {
          deps.bus.emit({ type: 'line', up, detail });
          if (up) void enable('line up');
          else if (!approving) cancelSession('serial line down');
        }),
      );
      await conn.start();
    },
    async fire(request) {
      if (!started) return { result: 'failed', reason: 'serial actuator not started' };
      if (busy) return { result: 'failed', reason: 'another vend is being approved: nothing was sent' };
      const current = session;
      if (!current) return { result: 'failed', reason: 'no vend session open (the machine canceled it or it timed out): nothing was sent' };
      if (current.item !== request.slot || current.amount !== request.amount) {
        return {
          result: 'failed',
          reason: `the machine asked for item ${current.item} at ${current.amount}, not ${request.slot} at ${request.amount}: nothing was sent`,
        };
      }
      busy = true;
      try {
        return await approve(request, current);
      } finally {
        busy = false;
      }
    },
    async denySession(reason) {
      if (approving || !session) {
        // C,STOP outside a session is out of sequence and makes the VMC reset the reader.
        log.debug({ reason }, 'deny without an open mdb session: nothing sent');
        return;
      }
      const ended = endSession();
      log.info({ item: ended?.item, reason }, 'mdb session denied');
      await send('C,STOP').catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'C,STOP could not be sent'));
    },
    health() {
      if (!started) return { ok: false, detail: 'serial actuator not started' };
      if (!conn.up) return { ok: false, detail: conn.detail };
      return {
        ok: enabled,
        detail: enabled ? `MDB reader enabled on ${conn.detail}` : `MDB reader not enabled by the machine yet (${conn.detail})`,
      };
    },
    async stop() {
      if (!started) return;
      started = false;
      for (const off of offs.splice(0)) off();
      endSession();
      enabled = false;
      await conn.stop();
    },
  };
}
