export type Headers = Record<string, string | string[] | undefined>;

/** Skew between the provider's `Date` header and our clock, in seconds; null without a usable header. */
export function dateSkewSec(headers: Headers, nowMs: number): number | null {
  const raw = headers.date;
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.round((nowMs - at) / 1000);
}
