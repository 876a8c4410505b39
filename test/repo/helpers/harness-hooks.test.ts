/**
 * No module under test/ other than a test file registers a hook at its top level. The test files
 * share each worker's modules (`isolate: false`), so such a hook is registered once, in the first
 * file that imports the module, and the later files' cleanups never run: that left the services of
 * test/selftest/tunnel.test.ts running after the whole suite. A harness uses `cleanupList()`
 * (test/helpers/cleanup.ts), which goes through the running test.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const TEST = resolve(import.meta.dirname, '../..');
const TOP_LEVEL_HOOK = /^(?:afterEach|beforeEach|afterAll|beforeAll)\(/m;

describe('hooks in shared test modules', () => {
  it('no harness or helper registers afterEach/beforeEach/afterAll/beforeAll at its top level', () => {
    const offenders = readdirSync(TEST, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
      .filter((name) => TOP_LEVEL_HOOK.test(readFileSync(join(TEST, name), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('the rule sees a top-level hook, and not one inside a function', () => {
    expect(TOP_LEVEL_HOOK.test('const x = 1;\nafterEach(async () => {});\n')).toBe(true);
    expect(TOP_LEVEL_HOOK.test('export function cleanup() {\n  afterEach(async () => {});\n}\n')).toBe(false);
  });
});
