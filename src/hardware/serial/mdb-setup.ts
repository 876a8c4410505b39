import { currencyNumber, parseSetup } from './mdb-lines.js';

export interface SetupCheck {
  /** The machine's limit on waiting for an approval, when the board reported one. */
  responseTimeSec: number | null;
  /** One line saying why vendgate cannot sell with this setup (the reader is kept off), or null. */
  refused: string | null;
}

/**
 * The reader setup the board reports against the settings: another currency, or decimal places
 * that disagree with actuator.serial.mdb.decimals or with the currency's smallest unit, would
 * multiply or divide every price — such a machine is not sold through.
 */
export function checkSetup(line: string, ours: { currency: string; decimals: number | undefined; scale: number }): SetupCheck {
  const setup = parseSetup(line);
  if (!setup) return { responseTimeSec: null, refused: null };
  const responseTimeSec = setup.responseTimeSec > 0 ? setup.responseTimeSec : null;
  const expected = currencyNumber(ours.currency);
  if (expected !== undefined && setup.currency !== expected) {
    return {
      responseTimeSec,
      refused: `MDB setup refused: the machine's currency code is ${setup.currency}, device.currency ${ours.currency} is ${expected}`,
    };
  }
  if (ours.decimals !== undefined && setup.decimals !== ours.decimals) {
    return {
      responseTimeSec,
      refused: `MDB setup refused: the machine's prices have ${setup.decimals} decimal places, actuator.serial.mdb.decimals says ${ours.decimals}`,
    };
  }
  // The machine cannot name an amount finer than our smallest unit and be charged it.
  if (10 ** setup.decimals / setup.scaleFactor > ours.scale) {
    return {
      responseTimeSec,
      refused: `MDB setup refused: the machine counts in 1/${10 ** setup.decimals / setup.scaleFactor} of a unit, ${ours.currency} is charged in 1/${ours.scale}: set the machine's decimal places`,
    };
  }
  return { responseTimeSec, refused: null };
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
