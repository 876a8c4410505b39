import type { z } from 'zod';

/**
 * Finds keys the schema does not know, anywhere in the input, so that a typo (`livemod`,
 * `retentionDay`) is an error with a suggestion instead of a key zod silently drops. Walks the
 * schema's own definition, so a key added to a section is known here with no second list.
 */
export interface UnknownKey {
  /** Dotted path of the unknown key, e.g. `device.catalog.0.prize`. */
  path: string;
  /** The same path as segments (a YAML key may itself contain a dot). */
  segments: string[];
  key: string;
  /** The closest known key at that place, when one is close enough to be the intended one. */
  suggestion: string | null;
}

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
};
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Through optional/default/prefault/nullable/readonly/pipe to the schema that describes the value. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const def = defOf(current);
    if (def.innerType) current = def.innerType;
    else if (def.type === 'pipe' && def.in) current = def.in;
    else return current;
  }
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

export function closestKey(key: string, known: readonly string[]): string | null {
  const lower = key.toLowerCase();
  let best: { key: string; distance: number } | null = null;
  for (const candidate of known) {
    const distance = candidate.toLowerCase() === lower ? 0 : editDistance(lower, candidate.toLowerCase());
    if (!best || distance < best.distance) best = { key: candidate, distance };
  }
  // Up to a third of the word wrong (at least 2 letters): a typo, not another word.
  return best && best.distance <= Math.max(2, Math.floor(key.length / 3)) ? best.key : null;
}

/** Every unknown key in `input` against `schema`, in document order. */
export function findUnknownKeys(schema: z.ZodType, input: unknown, path: string[] = []): UnknownKey[] {
  const inner = unwrap(schema);
  const def = defOf(inner);
  const found: UnknownKey[] = [];
  if (def.type === 'object' && def.shape && input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const known = Object.keys(def.shape);
    for (const [key, value] of Object.entries(input)) {
      const child = def.shape[key];
      if (child) found.push(...findUnknownKeys(child, value, [...path, key]));
      else found.push({ path: [...path, key].join('.'), segments: [...path, key], key, suggestion: closestKey(key, known) });
    }
  } else if (def.type === 'array' && def.element && Array.isArray(input)) {
    input.forEach((item, index) => found.push(...findUnknownKeys(def.element!, item, [...path, String(index)])));
  }
  return found;
}

/** Deletes the keys findUnknownKeys() reported, so the schema reports only the remaining problems. */
export function withoutKeys(input: Record<string, unknown>, unknown: readonly UnknownKey[]): Record<string, unknown> {
  const copy = structuredClone(input);
  for (const { segments: parts } of unknown) {
    let parent: any = copy;
    for (const part of parts.slice(0, -1)) parent = parent?.[part];
    if (parent && typeof parent === 'object') delete parent[parts.at(-1)!];
  }
  return copy;
}
