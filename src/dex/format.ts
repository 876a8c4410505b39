/**
 * The EVA-DTS DEX/UCS audit file, as text: one record a line, fields joined by `*`, every line ended
 * by CR LF, the audit framed as `DXS … ST … SE … DXE`, closed by a `G85` checksum. Pure: the figures
 * come in, the file goes out (docs/dex.md says what each record holds).
 */

/** CRC-16/ARC: polynomial 0x8005 reflected (0xA001), initial value 0, no final XOR. */
export function crc16Arc(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

/** A counter pair of DEX: since initialisation (never reset) and since the last reset read. */
export interface Pair {
  count: number;
  value: number;
}

export interface DexSelection {
  /** The selection id (the slot; `FARE` for a turnstile). */
  id: string;
  /** The price in force (the catalog's), in the smallest unit of ID4. */
  price: number;
  name: string;
  init: Pair;
  reset: Pair;
  /** Sales per price point: a selection sold at two prices has two. */
  prices: { price: number; init: number; reset: number }[];
}

export interface DexAudit {
  deviceId: string;
  version: string;
  /** Decimal places of the money fields, and the currency as MDB writes it ("1" + ISO 4217 number). */
  decimals: number;
  currencyNumber: string;
  /** This read, in the device's local time. */
  at: Date;
  paid: { init: Pair; reset: Pair };
  selections: DexSelection[];
  /** The readout chain: reads since init (this one included), the last read's time, reads since the last reset. */
  readsSinceInit: number;
  lastReadAt: Date | null;
  readsSinceReset: number;
}

/** DEX field text: the separators and line ends cannot appear inside a field. */
function field(value: string | number): string {
  return String(value).replace(/[*\r\n]/g, ' ');
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
const dexDate = (d: Date): string => `${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}`;
const dexTime = (d: Date): string => `${pad(d.getHours())}${pad(d.getMinutes())}`;

/** The whole file, CR LF line ends. */
export function formatDex(audit: DexAudit): string {
  const line = (...fields: (string | number)[]): string => fields.map(field).join('*');
  const set: string[] = [
    line('ST', '001', '0001'),
    line('ID1', audit.deviceId, 'vendgate', audit.version, '', '', '', audit.deviceId),
    line('ID4', audit.decimals, audit.currencyNumber),
    line('ID5', dexDate(audit.at), dexTime(audit.at)),
    line('VA1', audit.paid.init.value, audit.paid.init.count, audit.paid.reset.value, audit.paid.reset.count),
    line('DA1', 'vendgate', 'QR', audit.deviceId),
    line('DA2', audit.paid.init.value, audit.paid.init.count, audit.paid.reset.value, audit.paid.reset.count),
  ];
  for (const selection of audit.selections) {
    set.push(line('PA1', selection.id, selection.price, selection.name));
    set.push(line('PA2', selection.init.count, selection.init.value, selection.reset.count, selection.reset.value));
    for (const point of selection.prices) set.push(line('LA1', 0, selection.id, point.price, point.init, point.reset));
  }
  const last = audit.lastReadAt;
  set.push(
    line(
      'EA3',
      audit.readsSinceInit,
      dexDate(audit.at),
      dexTime(audit.at),
      '',
      last ? dexDate(last) : '',
      last ? dexTime(last) : '',
      '',
      audit.readsSinceReset,
    ),
  );
  const checked = set.map((l) => `${l}\r\n`).join('');
  const crc = crc16Arc(Buffer.from(checked, 'utf8'));
  set.push(line('G85', crc.toString(16).toUpperCase().padStart(4, '0')));
  // SE01 counts the segments from ST to SE, both included.
  set.push(line('SE', set.length + 1, '0001'));
  const frame = [line('DXS', `VG${audit.deviceId.toUpperCase().slice(0, 8)}`, 'VA', 'V1/1', 1), ...set, line('DXE', 1, 1)];
  return frame.map((l) => `${l}\r\n`).join('');
}

/** ISO 4217 numbers and the decimal places sales are kept in, for the currencies vendgate sells in. */
const CURRENCIES: Record<string, { number: string; decimals: number }> = {
  // No minor unit in practice: prices and provider amounts are whole tögrög and tenge.
  MNT: { number: '496', decimals: 0 },
  KZT: { number: '398', decimals: 0 },
  RUB: { number: '643', decimals: 2 },
  KGS: { number: '417', decimals: 2 },
  UZS: { number: '860', decimals: 0 },
  CNY: { number: '156', decimals: 2 },
  USD: { number: '840', decimals: 2 },
  EUR: { number: '978', decimals: 2 },
};

/** ID4's decimal places and currency field ("1" + the ISO number, as MDB writes it), or null for a currency not in the table. */
export function dexCurrency(code: string): { decimals: number; currencyNumber: string } | null {
  const known = CURRENCIES[code];
  return known ? { decimals: known.decimals, currencyNumber: `1${known.number}` } : null;
}
