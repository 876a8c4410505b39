import { preview } from './templates.js';

/**
 * The lines of a Qibixx-style MDB board's cashless-slave text protocol (upper case to the board,
 * lower case from it), and the money in them.
 */

/** Commands end with LF (Qibixx-style boards accept LF; CR LF is also read back fine). */
export const EOL = '\n';
/** `c,STATUS,VEND,<amount>,<item>`: the machine asks to sell item for amount. */
export const VEND_REQUEST = /^c,STATUS,VEND,([^,]*),([^,]*)$/;
export const INACTIVE = 'c,STATUS,INACTIVE';
export const OFFLINE = /^c,STATUS,OFFLINE\b/;
export const ENABLED = 'c,STATUS,ENABLED';
export const DISABLED = 'c,STATUS,DISABLED';
/** Session Idle: after a success (always idle) or after our start of a session (authorization first). */
export const SESSION_IDLE = /^c,STATUS,IDLE\b/;
export const CANCEL = /^c,(STATUS,)?(VEND,)?CANCEL/;
/** `c,VEND,SUCCESS[,<item>]`: the machine dispensed (some boards name the item). */
export const VEND_SUCCESS = /^c,VEND,SUCCESS(?:,([^,]*))?/;
export const REVALUE = /^c,(STATUS,)?REVALUE\b/;
/**
 * The reader setup the board reports where its firmware does:
 * `c,SETUP,<level>,<1 + ISO 4217 numeric>,<scale factor>,<decimal places>,<response time s>[,<options>]`,
 * where `<options>` (level 3) are the optional features the VMC switched on, in hex (always idle:
 * 0x20). Fields after them are ignored.
 */
export const SETUP = /^c,SETUP,(\d+),(\d+),(\d+),(\d+),(\d+)(?:,(?:0x)?([0-9A-Fa-f]{1,8}))?(?=,|\s*$)/;

/** Level-3 option bit: the VMC sends vend requests without a session begun (selection first). */
export const ALWAYS_IDLE_BIT = 0x20;

export interface MachineSetup {
  level: number;
  /** ISO 4217 numeric code ("1" prefix removed), e.g. 496 for MNT. */
  currency: number;
  scaleFactor: number;
  decimals: number;
  responseTimeSec: number;
  /** The level-3 options the VMC switched on, or null when the board does not report them. */
  options: number | null;
}

export function parseSetup(line: string): MachineSetup | null {
  const m = SETUP.exec(line);
  if (!m) return null;
  const code = m[2]!;
  return {
    level: Number(m[1]),
    currency: Number(code.length === 4 && code.startsWith('1') ? code.slice(1) : code),
    scaleFactor: Number(m[3]),
    decimals: Number(m[4]),
    responseTimeSec: Number(m[5]),
    options: m[6] === undefined ? null : parseInt(m[6], 16),
  };
}

/** ISO 4217 numeric codes of the currencies vendgate is sold in and a few the boards' examples use. */
const NUMERIC: Record<string, number> = { MNT: 496, KZT: 398, EUR: 978, CHF: 756, RUB: 643, USD: 840, GBP: 826 };

export function currencyNumber(currency: string): number | undefined {
  return NUMERIC[currency];
}

/** Converts the machine's decimal amount into smallest units, or explains why it cannot. */
export function parseMdbAmount(text: string, scale: number): number | string {
  if (!/^\d{1,9}(\.\d{1,6})?$/.test(text)) return `amount "${preview(text, 20)}" is not a positive decimal`;
  const units = Number(text) * scale;
  const rounded = Math.round(units);
  if (Math.abs(units - rounded) > 1e-6) return `amount ${text} is finer than the currency's smallest unit (scale ${scale})`;
  if (rounded <= 0) return `amount ${text} is not positive`;
  return rounded;
}

/** Smallest units as the board's decimal text (1500 at scale 1 → "1500"; 150 at scale 100 → "1.50"). */
export function formatMdbAmount(units: number, scale: number): string {
  const digits = Math.round(Math.log10(scale));
  return digits <= 0 ? String(units) : (units / scale).toFixed(digits);
}
