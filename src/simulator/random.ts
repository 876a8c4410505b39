/** A seeded random source (mulberry32): same seed, same sequence, so faults and ids are reproducible. */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [0, n). */
  int(n: number): number;
  /** True with probability p. Draws nothing when p is 0 or 1, so unused faults do not shift the sequence. */
  chance(p: number): boolean;
  /** Base62 characters, for ids and tokens. */
  token(length: number): string;
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return {
    next,
    int,
    chance: (p) => (p <= 0 ? false : p >= 1 ? true : next() < p),
    token: (length) => {
      let out = '';
      for (let i = 0; i < length; i++) out += ALPHABET[int(ALPHABET.length)];
      return out;
    },
  };
}
