import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * src/v8-tiering.ts in a real node: what the service sets on itself once the built-ins a start
 * needs are loaded, and that V8's optimizing compiler comes back after READY=1 (an order path that
 * does run hot, a burst of webhooks or a long selftest, still gets optimized code). Two functions
 * run as often, one before `afterReady()` and one after; V8's `--trace-opt` says which
 * reached TurboFan (`TURBOFAN`, `TURBOFAN_JS` since Node 24's V8).
 */
const TIERING = new URL('../../dist/v8-tiering.js', import.meta.url).href;

/**
 * A function too large for V8 to inline into its caller (both compilers stop at 460 bytes of
 * bytecode): V8 then marks it for optimization itself, whatever becomes of the loop that calls it.
 * Straight-line code, no loop of its own, so that only its calls count.
 */
const hot = (name: string): string =>
  `function ${name}(x) { let s = x | 0; ${Array.from({ length: 60 }, (_, k) => `s = (s + ((x * ${k + 3}) % ${k + 7})) | 0;`).join(' ')} return s; }`;

const SCRIPT = `
const { tierForService, START_BUILTINS } = await import(${JSON.stringify(TIERING)});
const tiering = tierForService();
${hot('hotBeforeReady')}
${hot('hotAfterReady')}
let sink = 0;
for (let i = 0; i < 400000; i++) sink += hotBeforeReady(i);
tiering.afterReady();
for (let i = 0; i < 400000; i++) sink += hotAfterReady(i);
const loaded = START_BUILTINS.every((name) => process.moduleLoadList.includes('NativeModule ' + name.slice(5)));
process.stderr.write(JSON.stringify({ flags: tiering.flags, loaded, sink: Number.isFinite(sink) }) + '\\n');
`;

type Tier = 'TURBOFAN' | 'MAGLEV';

/** The optimizing tiers each function was handed to (`--trace-opt`'s markings): TurboFan (`TURBOFAN_JS` since Node 24's V8), or Maglev. */
function run(nodeFlags: string[]): { tiers: (name: string) => Tier[]; result: { flags: string[]; loaded: boolean } } {
  const child = spawnSync(process.execPath, [...nodeFlags, '--trace-opt', '--input-type=module', '-e', SCRIPT], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(child.status, child.stderr).toBe(0);
  const reached = new Map<string, Set<Tier>>();
  for (const line of child.stdout.split('\n')) {
    // V8 marks a function, then compiles it on a helper thread: the marking is the hand-over, and a
    // compile still running when the script ends never says "completed".
    const tier = /^\[marking .*<JSFunction (\w+).* for optimization to (TURBOFAN|MAGLEV)(?:_JS)?,/.exec(line);
    if (!tier) continue;
    if (!reached.has(tier[1]!)) reached.set(tier[1]!, new Set());
    reached.get(tier[1]!)!.add(tier[2] as Tier);
  }
  return { tiers: (name) => [...(reached.get(name) ?? [])].sort(), result: JSON.parse(child.stderr.trim().split('\n').at(-1)!) };
}

const v8Major = Number(process.versions.v8.split('.')[0]);
// Node 24's V8 (13) has Maglev on, between the interpreter and TurboFan, and the pause is TurboFan's
// alone: there a hot function reaches Maglev first, and TurboFan only after much more running.
const optimizing = v8Major >= 13 ? expect.arrayContaining([expect.stringMatching(/^(?:TURBOFAN|MAGLEV)$/)]) : ['TURBOFAN'];

describe('the service sets its own V8 compilers (src/v8-tiering.ts)', () => {
  it('loads the built-ins a start needs first, keeps the optimizing compiler off until ready and turns it back on after', () => {
    const { tiers, result } = run([]);
    expect(result.loaded).toBe(true);
    expect(result.flags).toEqual(['--no-sparkplug', ...(v8Major >= 12 ? ['--invocation-count-for-turbofan=80000'] : []), '--no-turbofan']);
    // 400,000 calls is five times 80,000 calls' worth: the one that ran after
    // READY=1 reaches the optimizing compiler, the one that ran before did not reach TurboFan.
    expect(tiers('hotAfterReady')).toEqual(optimizing);
    expect(tiers('hotBeforeReady')).not.toContain('TURBOFAN');
  });

  it("leaves an operator's command-line flags alone: --no-turbofan stays off after ready, --sparkplug stays on", () => {
    const off = run(['--no-turbofan', '--sparkplug']);
    expect(off.result.flags).toEqual(v8Major >= 12 ? ['--invocation-count-for-turbofan=80000'] : []);
    expect(off.tiers('hotBeforeReady')).not.toContain('TURBOFAN');
    expect(off.tiers('hotAfterReady')).not.toContain('TURBOFAN');

    // And with no pause to lift, the compiler runs from the start.
    const on = run(['--turbofan']);
    expect(on.result.flags).not.toContain('--no-turbofan');
    expect(on.tiers('hotBeforeReady')).toEqual(optimizing);
    expect(on.tiers('hotAfterReady')).toEqual(optimizing);
  });
});
