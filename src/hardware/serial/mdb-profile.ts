import type { Logger } from '../../util/logger.js';
import { errorMessage } from '../../util/errors.js';
import type { ActuatorSettings } from '../../settings/sections/actuator.js';
import type { HardwareBus } from '../bus.js';
import type { Actuator, VendOutcome, VendRequest } from '../types.js';
import type { SerialConnection } from './connection.js';
import { approveRequest } from './mdb-approve.js';
import { authorizeFirst, otherItemOut } from './mdb-authorize.js';
import { approvalBudgetSec, checkSetup } from './mdb-setup.js';
import { createReaderEnable } from './mdb-enable.js';
import { createGoodsOutWatch } from './mdb-goods-out.js';
import {
  CANCEL,
  DISABLED,
  ENABLED,
  EOL,
  INACTIVE,
  OFFLINE,
  REVALUE,
  SESSION_IDLE,
  SETUP,
  VEND_REQUEST,
  VEND_SUCCESS,
  parseMdbAmount,
} from './mdb-lines.js';
import { preview } from './templates.js';

export { parseMdbAmount } from './mdb-lines.js';

type SerialSettings = ActuatorSettings['serial'];

export interface MdbSerialDeps {
  logger: Logger;
  bus: HardwareBus;
  connection: SerialConnection;
  /** Items the machine may ask for (catalog slots); anything else is denied. */
  knownItems: { has(item: string): boolean };
  /** Smallest currency units per 1.00 of the machine's decimal amount (from device.currency unless set). */
  scale: number;
  /** device.currency: compared with the machine's setup where the board reports it. */
  currency: string;
}

export interface Session {
  item: string;
  amount: number;
  /** The machine's own decimal text, echoed back in C,VEND so the approval matches to the cent. */
  amountText: string;
  timer: ReturnType<typeof setTimeout>;
  /** Monotonic ms after which the machine has given up: no approval is sent after it. */
  deadline: number;
}

/** Authorization first: how long a paid order waits for the reader to be enabled before it is refunded. */
const ENABLE_WAIT_MS = 10_000;

/**
 * MDB cashless device through a Pi MDB board's text protocol. Always idle: the machine selects
 * first (`c,STATUS,VEND,<amount>,<item>` → a `vend_request` event with the time the customer has);
 * after payment fire() approves with `C,VEND,<amount>`; denySession() or the machine's time running
 * out sends `C,STOP`. Authorization first: fire() starts the session with the paid credit
 * (mdb-authorize.ts). After `C,1` the board reports the reader coming up (INACTIVE, DISABLED,
 * ENABLED): that is the boot, not a reset. INACTIVE after the reader was enabled is a reset: the
 * board forgot its settings, which are sent again.
 */
export function createMdbSerialActuator(deps: MdbSerialDeps, settings: SerialSettings): Actuator {
  const log = deps.logger;
  const conn = deps.connection;
  const mdb = settings.mdb;
  const now = () => performance.now();
  let started = false;
  let busy = false;
  let enabled = false;
  let session: Session | null = null;
  /** While a vend is being approved, lines belong to its waiter. */
  let approving = false;
  let reenableAfterVend = false;
  /** The machine's time limit learned from the board's setup report (seconds), if any. */
  let learnedResponseSec: number | null = null;
  /** Why the machine's setup cannot be sold with (the reader is kept off), or null. */
  let setupRefused: string | null = null;
  /** What the machine's setup says about the session styles (for the selftest line), or null. */
  let sessionsDetail: string | null = null;
  /** Whether the machine reported always idle switched on (session: auto follows it). */
  let alwaysIdleOn = false;
  /** The style in force: the setting, or with auto what the machine reported (authorization first until then). */
  const style = (): 'always-idle' | 'authorization-first' =>
    mdb.session !== 'auto' ? mdb.session : alwaysIdleOn ? 'always-idle' : 'authorization-first';
  const offs: (() => void)[] = [];

  const alarm = (name: string, message: string) => deps.bus.emit({ type: 'machine_alarm', name, message, active: true });
  const goodsOut = createGoodsOutWatch({ logger: log, alarm });

  async function send(command: string): Promise<void> {
    log.debug({ command }, 'mdb command');
    await conn.write(command + EOL);
  }
  const sendQuietly = (command: string) =>
    send(command).catch((err: unknown) => log.warn({ err: errorMessage(err), command }, 'mdb command could not be sent'));

  const budgetSec = () => approvalBudgetSec(mdb, learnedResponseSec);

  const reader = createReaderEnable({ logger: log, send, setconf: mdb.setconf, allowed: () => started && !setupRefused });
  const enable = (reason: string) => reader.enable(reason);

  function reenableIfNeeded(): void {
    if (!reenableAfterVend || approving || busy) return;
    reenableAfterVend = false;
    void enable('reset');
  }

  function endSession(): Session | null {
    const ended = session;
    if (ended) clearTimeout(ended.timer);
    session = null;
    return ended;
  }

  function cancelSession(why: string, tellMachine: boolean): void {
    const ended = endSession();
    if (!ended) return;
    log.info({ item: ended.item, amount: ended.amount, why }, 'mdb session canceled');
    if (tellMachine) {
      goodsOut.denied();
      void sendQuietly('C,STOP');
    }
    deps.bus.emit({ type: 'session_cancel' });
  }

  function deny(why: string, line: string): void {
    log.warn({ line: preview(line), why }, 'mdb vend request denied');
    goodsOut.denied();
    void sendQuietly('C,STOP');
  }

  function onVendRequest(line: string, amountText: string, item: string): void {
    if (approving || busy) {
      if (!approving) return; // authorization first: fire()'s session reads it
      log.warn({ line: preview(line) }, 'mdb vend request while a vend is being approved: ignored');
      return;
    }
    if (setupRefused) return deny(setupRefused, line);
    if (style() === 'authorization-first') return deny('authorization first: no session was started for this request', line);
    const amount = parseMdbAmount(amountText, deps.scale);
    if (typeof amount === 'string') return deny(amount, line);
    if (!deps.knownItems.has(item)) return deny(`item "${preview(item, 20)}" is not in device.catalog`, line);
    if (session) log.warn({ previous: session.item }, 'new mdb vend request replaces an unanswered one');
    endSession();
    const budget = budgetSec();
    const timer = setTimeout(() => {
      if (session?.timer !== timer) return;
      log.warn({ item, budgetSec: budget }, "mdb vend request not paid within the machine's time: denied");
      cancelSession('not paid in time', true);
    }, budget * 1_000);
    session = { item, amount, amountText, timer, deadline: now() + budget * 1_000 };
    log.info({ item, amount, budgetSec: budget }, 'mdb vend request');
    deps.bus.emit({ type: 'vend_request', item, amount, budgetSec: budget });
  }

  function onLine(line: string): void {
    const request = VEND_REQUEST.exec(line);
    if (request) return onVendRequest(line, request[1]!, request[2]!);
    if (SETUP.test(line)) {
      const checked = checkSetup(line, { currency: deps.currency, decimals: mdb.decimals, scale: deps.scale, session: mdb.session });
      if (checked.responseTimeSec) learnedResponseSec = checked.responseTimeSec;
      if (checked.sessions && checked.sessions.detail !== sessionsDetail) {
        sessionsDetail = checked.sessions.detail;
        const before = style();
        alwaysIdleOn = checked.sessions.alwaysIdle === true;
        if (style() !== before) deps.bus.emit({ type: 'session_style', style: style() });
        log.info(
          { sessions: sessionsDetail, responseTimeSec: checked.responseTimeSec, session: mdb.session, inForce: style() },
          'mdb machine setup reported by the board',
        );
      }
      if (checked.refused && !setupRefused) {
        setupRefused = checked.refused;
        log.error({ line: preview(line) }, checked.refused);
        alarm('mdb_setup_mismatch', checked.refused);
        void sendQuietly('C,0');
      }
      return;
    }
    if (line === INACTIVE || OFFLINE.test(line)) {
      enabled = false;
      if (reader.booting) return log.debug({ line }, 'mdb reader coming up');
      // INACTIVE after the reader was up: the VMC reset it and the board forgot its settings.
      if (line === INACTIVE) reenableAfterVend = true;
      if (approving) return; // the approval's waiter reports it; re-enable once it is over
      cancelSession('machine or board reset', false);
      reenableIfNeeded();
      return;
    }
    if (line === ENABLED) {
      enabled = true;
      reader.enabledSeen();
      // Enabled again while a request waits: the machine ended it, or re-sent READER ENABLE. Either
      // way the request is over for us, and C,STOP makes sure the machine does not wait for it.
      if (!approving && !busy) cancelSession('the machine reported ENABLED during the session', true);
      return;
    }
    if (line === DISABLED) {
      enabled = false;
      if (reader.booting) return log.debug({ line }, 'mdb reader coming up');
      if (!approving && !busy) cancelSession('machine disabled the reader', false);
      return;
    }
    if (CANCEL.test(line)) {
      if (!approving && !busy) cancelSession('machine canceled', false);
      return;
    }
    if (REVALUE.test(line)) {
      log.warn({ line: preview(line) }, 'mdb revalue request denied: vendgate holds no credit to put back on a card');
      return;
    }
    if (approving || busy) return; // fire()'s waiter classifies these
    if (VEND_SUCCESS.test(line)) return goodsOut.successOutsideApproval(line);
    if (SESSION_IDLE.test(line) || line.startsWith('c,SET') || line === 'c,1' || line === 'c,0' || line.startsWith('r,')) {
      log.debug({ line }, 'mdb status');
      return;
    }
    log.warn({ line: preview(line) }, 'unrecognised line from the MDB board ignored');
  }

  async function fireAlwaysIdle(request: VendRequest): Promise<VendOutcome> {
    const current = session;
    if (!current) return { result: 'failed', reason: 'no vend session open (the machine canceled it or it timed out): nothing was sent' };
    if (current.item !== request.slot || current.amount !== request.amount) {
      return {
        result: 'failed',
        reason: `the machine asked for item ${current.item} at ${current.amount}, not ${request.slot} at ${request.amount}: nothing was sent`,
      };
    }
    if (now() >= current.deadline) {
      cancelSession("paid after the machine's time ran out", true);
      return { result: 'failed', reason: "paid after the machine's time for the request ran out: no approval sent" };
    }
    approving = true;
    clearTimeout(current.timer);
    try {
      const outcome = await approveRequest(
        { logger: log, connection: conn, send, resultTimeoutMs: settings.timeoutMs, isCurrent: () => session === current },
        request,
        current,
      );
      const out = outcome.result === 'vended' ? VEND_SUCCESS.exec(outcome.detail ?? '')?.[1] : undefined;
      if (out !== undefined && out !== current.item) otherItemOut({ logger: log, alarm }, request, out);
      return outcome;
    } finally {
      approving = false;
      endSession();
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
          else if (!approving && !busy) cancelSession('serial line down', false);
        }),
      );
      await conn.start();
    },
    async fire(request) {
      if (!started) return { result: 'failed', reason: 'serial actuator not started' };
      if (busy) return { result: 'failed', reason: 'another vend is being approved: nothing was sent' };
      if (setupRefused) return { result: 'failed', reason: `${setupRefused}: nothing was sent` };
      busy = true;
      try {
        let outcome: VendOutcome;
        if (style() === 'authorization-first') {
          // A payment right after a reset or the board's boot: the reader may be a few polls from enabled.
          if (!enabled && !(await reader.nextEnabled(Math.min(budgetSec() * 1_000, ENABLE_WAIT_MS)))) {
            return { result: 'failed', reason: 'the machine has not enabled the reader: no session was started' };
          }
          endSession();
          const selectionTimeoutMs = budgetSec() * 1_000;
          outcome = await authorizeFirst(
            { logger: log, connection: conn, send, scale: deps.scale, selectionTimeoutMs, resultTimeoutMs: settings.timeoutMs, alarm },
            request,
          );
          if (outcome.result === 'failed') goodsOut.denied();
        } else {
          outcome = await fireAlwaysIdle(request);
        }
        if (outcome.result === 'vended') goodsOut.vended();
        return outcome;
      } finally {
        busy = false;
        reenableIfNeeded();
      }
    },
    async denySession(reason) {
      if (approving || busy || !session) {
        // C,STOP outside a session is out of sequence and makes the VMC reset the reader.
        log.debug({ reason }, 'deny without an open mdb session: nothing sent');
        return;
      }
      const ended = endSession();
      log.info({ item: ended?.item, reason }, 'mdb session denied');
      goodsOut.denied();
      await sendQuietly('C,STOP');
    },
    sessionStyle: style,
    health() {
      if (!started) return { ok: false, detail: 'serial actuator not started' };
      if (!conn.up) return { ok: false, detail: conn.detail };
      if (setupRefused) return { ok: false, detail: setupRefused };
      const configured = mdb.session === 'auto' ? `auto (${style()} in force)` : mdb.session;
      const machine = sessionsDetail ? `; the machine: ${sessionsDetail}; configured: ${configured}` : '';
      return {
        ok: enabled,
        detail: enabled
          ? `MDB reader enabled on ${conn.detail}${machine}`
          : `MDB reader not enabled by the machine yet (${conn.detail})${machine}`,
      };
    },
    async stop() {
      if (!started) return;
      started = false;
      for (const off of offs.splice(0)) off();
      reader.stop();
      endSession();
      enabled = false;
      await conn.stop();
    },
  };
}
