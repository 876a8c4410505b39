import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { settingsSchema } from '../../src/settings/index.js';
import { ErrorCodes } from '../../src/util/errors.js';
import { REPORT_LINES } from './report-lines.js';

const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
const CONFIGURATION = doc('configuration.md');
const ERRORS = doc('errors.md');
const SELFTEST = doc('selftest.md');

/** Dotted paths of every object key in the schema (through defaults, optionals and transforms). */
function keyPaths(schema: z.ZodType, prefix = ''): string[] {
  let current = schema as unknown as { def: Record<string, any> };
  for (;;) {
    const def = current.def;
    if (['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch'].includes(def.type)) current = def.innerType;
    else if (def.type === 'pipe') current = def.in;
    else break;
  }
  if (current.def.type !== 'object') return [];
  return Object.entries(current.def.shape as Record<string, z.ZodType>).flatMap(([key, child]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return [path, ...keyPaths(child, path)];
  });
}

describe('docs/, the reference for the people who run it', () => {
  it('docs/configuration.md documents every configuration key', () => {
    const all = keyPaths(settingsSchema() as unknown as z.ZodType);
    // Leaves: the keys a person sets (sections and groups such as http.webhook only hold them).
    const keys = all.filter((path) => !all.some((other) => other.startsWith(`${path}.`)));
    expect(keys.length).toBeGreaterThan(80);
    expect(keys.filter((path) => !CONFIGURATION.includes(`\`${path}\``))).toEqual([]);
  });

  it('docs/errors.md lists every stable error code with what to do', () => {
    const missing = Object.values(ErrorCodes).filter((code) => !new RegExp(`^\\| \`${code}\` \\| .+ \\| .+ \\|$`, 'm').test(ERRORS));
    expect(missing).toEqual([]);
  });

  it('docs/selftest.md explains every selftest line', () => {
    const names = [...REPORT_LINES, 'serial', 'gpio', 'actuator', 'inputs', 'actuate', 'fiscal', 'fiscal.register', 'fiscal.receipts'];
    expect(names.filter((name) => !SELFTEST.includes(`| \`${name}\` |`))).toEqual([]);
  });
});
