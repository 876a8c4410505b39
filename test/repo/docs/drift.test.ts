/**
 * The lists the code holds and the docs repeat, held against each other so they cannot drift: the
 * command line's commands (docs/reference.md and ARCHITECTURE.md's external contract), the stable
 * error codes (docs/errors.md, and no `VG_ERR_*` in src/ outside ErrorCodes), and every settings key
 * (docs/configuration.md, "Every key").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../../src/cli/commands.js';
import { settingsSchema } from '../../../src/settings/schema.js';
import { ErrorCodes } from '../../../src/util/errors.js';

const REPO = resolve(import.meta.dirname, '../../..');
const read = (path: string): string => readFileSync(join(REPO, path), 'utf8');

type Def = { type: string; shape?: Record<string, z.ZodType>; innerType?: z.ZodType; in?: z.ZodType };
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Through optional/default/prefault/nullable/pipe to the schema that describes the value. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const def = defOf(current);
    if (def.innerType) current = def.innerType;
    else if (def.type === 'pipe' && def.in) current = def.in;
    else return current;
  }
}

/** Dotted paths of every key an operator can write: objects are walked, anything else is a key. */
function settingsKeys(schema: z.ZodType, path: string[] = []): string[] {
  const def = defOf(unwrap(schema));
  if (def.type === 'object' && def.shape) {
    return Object.entries(def.shape).flatMap(([key, child]) => {
      const inner = defOf(unwrap(child));
      const here = [...path, key];
      return inner.type === 'object' && inner.shape ? settingsKeys(child, here) : [here.join('.')];
    });
  }
  return [path.join('.')];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(REPO, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('the docs list what the code has', () => {
  it('every command of the command line is in docs/reference.md and in ARCHITECTURE.md', () => {
    const reference = read('docs/reference.md');
    const contract = read('ARCHITECTURE.md');
    const missing: string[] = [];
    for (const name of Object.keys(COMMANDS)) {
      if (!new RegExp(`^ {2}${name}\\b`, 'm').test(reference)) missing.push(`docs/reference.md: ${name}`);
      if (!contract.includes(`\`${name}\``)) missing.push(`ARCHITECTURE.md: ${name}`);
    }
    expect(missing).toEqual([]);
  });

  it('every stable error code is in docs/errors.md, and src/ sends no VG_ERR_ code that ErrorCodes lacks', () => {
    const errors = read('docs/errors.md');
    const known = new Set<string>(Object.values(ErrorCodes));
    const undocumented = [...known].filter((code) => !errors.includes(`| \`${code}\` |`));
    expect(undocumented).toEqual([]);
    const stray: string[] = [];
    for (const file of sourceFiles('src')) {
      for (const [code] of read(file).matchAll(/VG_ERR_[A-Z0-9_]+/g)) {
        if (!known.has(code)) stray.push(`${file}: ${code}`);
      }
    }
    expect(stray).toEqual([]);
  });

  it('every settings key is described in docs/configuration.md', () => {
    const configuration = read('docs/configuration.md');
    const keys = settingsKeys(settingsSchema());
    expect(keys.length).toBeGreaterThan(100);
    expect(keys.filter((key) => !configuration.includes(`\`${key}\``))).toEqual([]);
  });
});
