/**
 * How a QR code's text is split into segments of the three modes a phone reads (ISO/IEC 18004):
 * numeric (digits, 10 bits per 3), alphanumeric (digits, A–Z and ` $%*+-./:`, 11 bits per 2) and byte
 * (UTF-8, 8 bits each). Each segment costs a 4-bit mode header and a character count whose width
 * depends on the version range. The fewest bits give the smallest code for the same text: a long run
 * of digits in QPay's QR text is cheaper as numeric, a lowercase URL is bytes.
 *
 * qrcode finds the same optimum itself, with a shortest path over a graph of every candidate
 * segment, and that search allocated ~380 KB per order (a third of what an order allocates; the
 * garbage collector's pauses are the tail of paid → actuation). This is a dynamic programme over the
 * characters instead: one pass, three costs per character, a few hundred bytes.
 */
export type QrSegmentMode = 'numeric' | 'alphanumeric' | 'byte';

export interface QrSegment {
  data: string;
  mode: QrSegmentMode;
}

const MODES = ['numeric', 'alphanumeric', 'byte'] as const satisfies readonly QrSegmentMode[];
/** A mode by its index in MODES, and one number (or mode) per mode. */
type Mode = 0 | 1 | 2;
type PerMode<T> = [T, T, T];
const perMode = <T>(f: (mode: Mode) => T): PerMode<T> => [f(0), f(1), f(2)];
const ALPHANUMERIC = new Set('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:');

/** Width of the character count, by version range: 1–9, 10–26, 27–40. */
const COUNT_BITS: Record<QrSegmentMode, readonly [number, number, number]> = {
  numeric: [10, 12, 14],
  alphanumeric: [9, 11, 13],
  byte: [8, 16, 16],
};

/**
 * Data bits of the largest version of the first two ranges at error correction level M (qrcode's
 * default, which the kiosk keeps): version 9 holds 182 data codewords, version 26 holds 1,062.
 */
const RANGE_CAPACITY_BITS = [182 * 8, 1062 * 8] as const;

/** Costs are in sixths of a bit, so that numeric (10/3) and alphanumeric (11/2) stay whole. */
const SIXTHS = 6;

function charCost(mode: QrSegmentMode, char: string): number {
  if (mode === 'numeric') return char >= '0' && char <= '9' ? 20 : Infinity;
  if (mode === 'alphanumeric') return ALPHANUMERIC.has(char) ? 33 : Infinity;
  return Buffer.byteLength(char, 'utf8') * 8 * SIXTHS;
}

/** A segment ends on a whole number of bits: its fractional cost is rounded up when it closes. */
const close = (cost: number) => Math.ceil(cost / SIXTHS) * SIXTHS;

/**
 * The cheapest segments of `chars` for one version range, and their length in bits. Plain numbers
 * and one byte per character and mode: this runs for every order's QR.
 */
function cheapest(chars: readonly string[], range: 0 | 1 | 2): { segments: QrSegment[]; bits: number } {
  const header: PerMode<number> = perMode((m) => (4 + COUNT_BITS[MODES[m]][range]) * SIXTHS);
  // cost[m]: the cheapest encoding of the characters so far whose last segment, still open, is in
  // mode m. came[3i + m]: the mode of character i - 1 on the cheapest path that puts character i in m.
  const cost: PerMode<number> = [0, 0, 0];
  const came = new Uint8Array(chars.length * 3);
  chars.forEach((char, i) => {
    const before: PerMode<number> = [cost[0], cost[1], cost[2]];
    for (const m of [0, 1, 2] as const) {
      const add = charCost(MODES[m], char);
      if (i === 0) {
        cost[m] = header[m] + add;
        came[m] = m;
        continue;
      }
      // Stay in the open segment in mode m, or close the one in mode p and open one in mode m.
      let best = before[m];
      let from: Mode = m;
      for (const p of [0, 1, 2] as const) {
        const switched = close(before[p]) + header[m];
        if (p !== m && switched < best) [best, from] = [switched, p];
      }
      cost[m] = best + add;
      came[i * 3 + m] = from;
    }
  });
  const last = ([0, 1, 2] as const).reduce<Mode>((best, m) => (close(cost[m]) < close(cost[best]) ? m : best), 0);
  // Walk back from the last character: each character's mode; runs of one mode are the segments.
  const modes = new Uint8Array(chars.length);
  for (let i = chars.length - 1, m: number = last; i >= 0; i -= 1) {
    modes[i] = m;
    m = came[i * 3 + m] ?? m;
  }
  const segments: QrSegment[] = [];
  let run = '';
  chars.forEach((char, i) => {
    run += char;
    if (i + 1 === chars.length || modes[i + 1] !== modes[i]) {
      segments.push({ data: run, mode: MODES[(modes[i] ?? 2) as Mode] });
      run = '';
    }
  });
  return { segments, bits: close(cost[last]) / SIXTHS };
}

/**
 * The segments qrcode should encode `text` with: the cheapest for the version range the text lands
 * in at level M. Empty text is one empty byte segment.
 */
export function qrSegments(text: string): QrSegment[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [{ data: '', mode: 'byte' }];
  for (const range of [0, 1] as const) {
    const { segments, bits } = cheapest(chars, range);
    if (bits <= RANGE_CAPACITY_BITS[range]) return segments;
  }
  return cheapest(chars, 2).segments;
}
