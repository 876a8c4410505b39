import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, stop } from '../helpers/cleanup.js';
import { startService } from '../helpers/service.js';

/**
 * What a start costs in V8's optimizing compiler (TurboFan). V8 hands a function to it once the
 * function has run often enough (3,000 calls' worth by default), and the first compile brings ~6 MB
 * of node's own machine code (the compiler itself) into the process's memory, where it stays: idle
 * RSS 70 against 64 MB on Node 22 (docs/benchmarks.md, ninth round). A start of the bundle ran two
 * kinds of function that often: zod's schema constructor (the settings schema is ~1,400 schemas)
 * and Node's path functions (fileURLToPath, path.resolve), once per character of each chunk's path
 * as Node's ES module loader resolves the ~44 chunks a start loads. The unit raises the count
 * (`VENDGATE_NODE22_FLAGS` in systemd/vendgate.service).
 *
 * The start here runs from a release directory whose path is longer than a device's
 * (/opt/vendgate/releases/<version>-<stamp>/dist/…): the path functions' count grows with it.
 */
const REPO = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'vendgate-optimizer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `NAME=value` of the unit's `Environment=` lines, split into flags. */
function unitFlags(name: string): string[] {
  const unit = readFileSync(join(REPO, 'systemd', 'vendgate.service'), 'utf8');
  const line = new RegExp(`^Environment="?${name}=([^"\\n]*)"?$`, 'm').exec(unit);
  if (!line) throw new Error(`no ${name} in systemd/vendgate.service`);
  return line[1]!.split(/\s+/).filter(Boolean);
}

/** dist/, config/ and package.json under a release directory as long as a device's and more; node_modules linked. */
function releaseCopy(): string {
  const release = join(dir, 'opt', 'vendgate', 'releases', '0.10.12-20261206T204500Z-2');
  mkdirSync(release, { recursive: true });
  for (const part of ['dist', 'config', 'package.json']) cpSync(join(REPO, part), join(release, part), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(release, 'node_modules'));
  return release;
}

/** V8's `--trace-opt` lines that hand a function to TurboFan (marking it, or compiling it on another thread). */
const toTurbofan = (lines: string[]): string[] => lines.filter((line) => /\bTURBOFAN\b/.test(line));

const major = Number(process.versions.node.split('.')[0]);

describe("a start of the bundle with the unit's V8 flags", () => {
  const defer = cleanup();

  it(
    major >= 22
      ? "reaches ready without handing one function to TurboFan, where with V8's default count the same start is hot enough for an optimizing compiler"
      : 'on Node 20 the Node 22 flags are refused: install-pi.sh leaves them out for a system node that refuses them',
    { timeout: 90_000 },
    async () => {
      const flags = unitFlags('VENDGATE_NODE_FLAGS');
      const node22 = unitFlags('VENDGATE_NODE22_FLAGS');
      expect(node22).toEqual([expect.stringMatching(/^--invocation-count-for-turbofan=\d+$/)]);
      if (major < 22) {
        const refused = spawnSync(process.execPath, [...flags, ...node22, '-e', '0'], { encoding: 'utf8' });
        expect(refused.status).not.toBe(0);
        expect(refused.stderr).toContain(`bad option: ${node22[0]}`);
        expect(spawnSync(process.execPath, [...flags, '-e', '0']).status).toBe(0);
        return;
      }
      const main = join(releaseCopy(), 'dist', 'vendgate.js');
      const lean = defer(await startService({ main, node: [process.execPath, ...flags, ...node22, '--trace-opt'] }), stop);
      // V8 writes its trace lines through C's stdio, which a pipe buffers until the process exits.
      await lean.stop();
      expect(lean.stdout().some((line) => line.includes('"vendgate ready"'))).toBe(true);
      expect(toTurbofan(lean.stdout())).toEqual([]);

      // Without the flag the same start is hot enough for an optimizing compiler: TurboFan on Node 22
      // (the four functions above), Maglev first on Node 24, whose V8 has it on.
      const plain = defer(await startService({ main, node: [process.execPath, ...flags, '--trace-opt'] }), stop);
      await plain.stop();
      const optimized = plain.stdout().filter((line) => /\b(?:TURBOFAN|MAGLEV)\b/.test(line));
      expect(optimized.some((line) => /isPosixPathSeparator|normalizeString|getPathFromURLPosix/.test(line))).toBe(true);
      if (major === 22) expect(toTurbofan(plain.stdout()).length).toBeGreaterThan(0);
    },
  );

  it(
    "compiles no baseline code (Sparkplug), where a start without --no-sparkplug compiles the start's functions",
    { timeout: 90_000 },
    async () => {
      // Sparkplug's code for every function a start ran a few times stayed for the life of the
      // process: ~1.5 MB idle on Node 22 (docs/benchmarks.md, tenth round).
      const flags = unitFlags('VENDGATE_NODE_FLAGS');
      expect(flags).toContain('--no-sparkplug');
      const main = join(REPO, 'dist', 'vendgate.js');
      const trace = '--trace-baseline-batch-compilation';
      const baseline = (lines: string[]): string[] => lines.filter((line) => line.startsWith('[Baseline batch compilation]'));

      const lean = defer(await startService({ main, node: [process.execPath, ...flags, trace] }), stop);
      await lean.stop();
      expect(lean.stdout().some((line) => line.includes('"vendgate ready"'))).toBe(true);
      expect(baseline(lean.stdout())).toEqual([]);

      const plain = defer(
        await startService({ main, node: [process.execPath, ...flags.filter((flag) => flag !== '--no-sparkplug'), trace] }),
        stop,
      );
      await plain.stop();
      expect(baseline(plain.stdout()).length).toBeGreaterThan(100);
    },
  );
});
