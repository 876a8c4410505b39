import { ALWAYS_IDLE_BIT, currencyNumber, parseSetup, type MachineSetup } from './mdb-lines.js';

export type SessionStyle = 'always-idle' | 'authorization-first';

/** What the machine's setup says about the two session styles. */
export interface MachineSessions {
  /** true: always idle is on; false: the machine only starts sessions the reader began; null: not reported. */
  alwaysIdle: boolean | null;
  /** One phrase for the selftest and the log, e.g. "level 3, always idle on: both session styles". */
  detail: string;
}

/**
 * Authorization first is every MDB machine's way (the reader begins the session). Always idle is a
 * level-3 option the VMC must have switched on: a level 1 or 2 machine never has it, a level 3
 * machine says so in its option bits (0x20), where the board reports them.
 */
export function machineSessions(setup: Pick<MachineSetup, 'level' | 'options'>): MachineSessions {
  if (setup.level < 3) {
    return { alwaysIdle: false, detail: `level ${setup.level}, no always idle (a level 3 option): authorization first only` };
  }
  if (setup.options === null) {
    return { alwaysIdle: null, detail: `level ${setup.level}, option bits not reported: always idle unknown, authorization first works` };
  }
  const hex = `0x${setup.options.toString(16).padStart(2, '0')}`;
  return (setup.options & ALWAYS_IDLE_BIT) !== 0
    ? { alwaysIdle: true, detail: `level ${setup.level}, always idle on (options ${hex}): both session styles` }
    : { alwaysIdle: false, detail: `level ${setup.level}, always idle off (options ${hex}): authorization first only` };
}

export interface SetupCheck {
  /** The machine's limit on waiting for an approval, when the board reported one. */
  responseTimeSec: number | null;
  /** What the machine supports, when the board reported its setup. */
  sessions: MachineSessions | null;
  /** One line saying why vendgate cannot sell with this setup (the reader is kept off), or null. */
  refused: string | null;
}

/**
 * The reader setup the board reports against the settings: another currency, or decimal places
 * that disagree with actuator.serial.mdb.decimals or with the currency's smallest unit, would
 * multiply or divide every price; always idle configured on a machine that says it has no always
 * idle would never see a vend request — such a machine is not sold through.
 */
export function checkSetup(
  line: string,
  ours: { currency: string; decimals: number | undefined; scale: number; session: SessionStyle | 'auto' },
): SetupCheck {
  const setup = parseSetup(line);
  if (!setup) return { responseTimeSec: null, sessions: null, refused: null };
  const responseTimeSec = setup.responseTimeSec > 0 ? setup.responseTimeSec : null;
  const sessions = machineSessions(setup);
  if (ours.session === 'always-idle' && sessions.alwaysIdle === false) {
    return {
      responseTimeSec,
      sessions,
      refused: `MDB setup refused: actuator.serial.mdb.session is always-idle, the machine reports ${sessions.detail}: set session: authorization-first or auto, or switch always idle on in the machine`,
    };
  }
  const expected = currencyNumber(ours.currency);
  if (expected !== undefined && setup.currency !== expected) {
    return {
      responseTimeSec,
      sessions,
      refused: `MDB setup refused: the machine's currency code is ${setup.currency}, device.currency ${ours.currency} is ${expected}`,
    };
  }
  if (ours.decimals !== undefined && setup.decimals !== ours.decimals) {
    return {
      responseTimeSec,
      sessions,
      refused: `MDB setup refused: the machine's prices have ${setup.decimals} decimal places, actuator.serial.mdb.decimals says ${ours.decimals}`,
    };
  }
  // The machine cannot name an amount finer than our smallest unit and be charged it.
  if (10 ** setup.decimals / setup.scaleFactor > ours.scale) {
    return {
      responseTimeSec,
      sessions,
      refused: `MDB setup refused: the machine counts in 1/${10 ** setup.decimals / setup.scaleFactor} of a unit, ${ours.currency} is charged in 1/${ours.scale}: set the machine's decimal places`,
    };
  }
  return { responseTimeSec, sessions, refused: null };
}

/** Margin kept before the machine's own limit: an approval must reach it while it still waits. */
const MARGIN_SEC = 2;

/**
 * Seconds a vend request may wait for our approval: the smallest of our own limit, the machine's
 * configured one and the board's report, less a margin where a machine's limit is known.
 */
export function approvalBudgetSec(
  mdb: { sessionTimeoutSec: number; responseTimeSec?: number | undefined },
  learned: number | null,
): number {
  const machine = [mdb.responseTimeSec, learned ?? undefined].filter((v): v is number => v !== undefined);
  if (machine.length === 0) return mdb.sessionTimeoutSec;
  return Math.max(1, Math.min(mdb.sessionTimeoutSec, Math.min(...machine) - MARGIN_SEC));
}
