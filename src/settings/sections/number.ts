import * as z from 'zod';

/** A whole number from `min` to `max`, `fallback` when the key is absent: most settings are one. */
export function intIn(min: number, max: number, fallback: number) {
  return z.number().int().min(min).max(max).default(fallback);
}
