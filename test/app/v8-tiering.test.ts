import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * src/v8-tiering.ts in a real node: what the service sets on itself once the built-ins a start
 * needs are loaded, and that V8's optimizing compiler comes back after READY=1 (an order path that
 * does run hot, a burst of webhooks or a long selftest, still gets optimized code). Two functions
 * run the same hot loop, one before `afterReady()` and one after; V8's `--trace-opt` says which
 * reached TurboFan.
 */
const TIERING = new URL('../../dist/v8-tiering.js', import.meta.url).href;

const SCRIPT = `
const { tierForService, START_BUILTINS } = await import(${JSON.stringify(TIERING)});
const tiering = tierForService();
function hotBeforeReady(x) { let s = 0; for (let i = 0; i < 50; i++) s += (i * x) % 7; return s; }
function hotAfterReady(x) { let s = 0; for (let i = 0; i < 50; i++) s += (i * x) % 7; return s; }
let sink = 0;
for (let i = 0; i < 400000; i++) sink += hotBeforeReady(i);
tiering.afterReady();
for (let i = 0; i < 400000; i++) sink += hotAfterReady(i);
const loaded = START_BUILTINS.every((name) => process.moduleLoadList.includes('NativeModule ' + name.slice(5)));
process.stderr.write(JSON.stringify({ flags: tiering.flags, loaded, sink: sink > 0 }) + '\\n');
`;

function run(nodeFlags: string[]): { optimized: string[]; result: { flags: string[]; loaded: boolean } } {
  const child = spawnSync(process.execPath, [...nodeFlags, '--trace-opt', '--input-type=module', '-e', SCRIPT], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(child.status, child.stderr).toBe(0);
  const optimized = child.stdout
    .split('\n')
    .filter((line) => /completed (?:optimizing|compiling)/.test(line) && /\bTURBOFAN\b/.test(line))
    .map((line) => /<JSFunction (\w+)/.exec(line)?.[1] ?? line);
  return { optimized, result: JSON.parse(child.stderr.trim().split('\n').at(-1)!) };
}

const v8Major = Number(process.versions.v8.split('.')[0]);

describe('the service sets its own V8 compilers (src/v8-tiering.ts)', () => {
  it('loads the built-ins a start needs first, keeps the optimizing compiler off until ready and turns it back on after', () => {
    const { optimized, result } = run([]);
    expect(result.loaded).toBe(true);
    expect(result.flags).toEqual(['--no-sparkplug', ...(v8Major >= 12 ? ['--invocation-count-for-turbofan=80000'] : []), '--no-turbofan']);
    // 400,000 calls of a 50-iteration loop is far past 80,000 calls' worth: the one that ran after
    // READY=1 reaches TurboFan, the one that ran before did not.
    expect(optimized).toContain('hotAfterReady');
    expect(optimized).not.toContain('hotBeforeReady');
  });

  it("leaves an operator's command-line flags alone: --no-turbofan stays off after ready, --sparkplug stays on", () => {
    const off = run(['--no-turbofan', '--sparkplug']);
    expect(off.result.flags).toEqual(v8Major >= 12 ? ['--invocation-count-for-turbofan=80000'] : []);
    expect(off.optimized).toEqual([]);

    // And with no pause to lift, the compiler runs from the start.
    const on = run(['--turbofan']);
    expect(on.result.flags).not.toContain('--no-turbofan');
    expect(on.optimized).toEqual(expect.arrayContaining(['hotBeforeReady', 'hotAfterReady']));
  });
});
