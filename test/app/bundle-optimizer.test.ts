import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, stop } from '../helpers/cleanup.js';
import { startService } from '../helpers/service.js';

/**
 * What a start costs in V8's compilers, and in the compiled code Node carries for its own modules.
 *
 * - V8 hands a function to its optimizing compiler (TurboFan) once the function has run often enough
 *   (3,000 calls' worth by default), and the first compile brings ~6 MB of node's own machine code
 *   (the compiler itself) into the process's memory, where it stays: idle RSS 70 against 64 MB on
 *   Node 22 (docs/benchmarks.md, ninth round). A start ran two kinds of function that often: zod's
 *   schema constructor (the settings schema) and Node's path functions (fileURLToPath,
 *   path.resolve), once per character of each chunk's path as Node's ES module loader resolves the
 *   ~44 chunks a start loads.
 * - V8's baseline compiler (Sparkplug) compiled every function a start ran a few times and kept that
 *   code (~1.5 MB idle, tenth round).
 * - Node 22 rejects the compiled code it carries for its built-in modules when any V8 flag is on the
 *   command line, and a start compiles ~99 of them from source (eleventh round).
 *
 * So the service sets its compilers itself (src/v8-tiering.ts), once the built-ins a start needs are
 * loaded, and the unit gives node no V8 flag. The start here runs from a release directory whose path
 * is longer than a device's (/opt/vendgate/releases/<version>-<stamp>/dist/…): the path functions'
 * count grows with it.
 */
const REPO = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'vendgate-optimizer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The V8 flags the unit puts on node's command line (`VENDGATE_NODE_FLAGS`, expanded in ExecStart): none. */
function unitFlags(): string[] {
  const unit = readFileSync(join(REPO, 'systemd', 'vendgate.service'), 'utf8');
  const line = /^Environment="?VENDGATE_NODE_FLAGS=([^"\n]*)"?$/m.exec(unit);
  if (!line) throw new Error('no VENDGATE_NODE_FLAGS in systemd/vendgate.service');
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

/** V8's `--trace-opt` lines that hand a function to TurboFan (marking it, or compiling it on another thread); `TURBOFAN_JS` since Node 24's V8. */
const toTurbofan = (lines: string[]): string[] => lines.filter((line) => /\bTURBOFAN(?:_JS)?\b/.test(line));

/** Node's path functions, which its ES module loader runs once per character of each chunk's path. */
const PATH_FUNCTIONS = /isPosixPathSeparator|normalizeString|getPathFromURLPosix/;

const major = Number(process.versions.node.split('.')[0]);
const V8_MAJOR = Number(process.versions.v8.split('.')[0]);

describe('a start of the bundle as the unit starts it (no V8 flag on the command line)', () => {
  const defer = cleanup();

  it(
    'reaches ready without handing one function to TurboFan, where the same start with the compiler left on is hot enough for it',
    { timeout: 90_000 },
    async () => {
      expect(unitFlags()).toEqual([]);
      const main = join(releaseCopy(), 'dist', 'vendgate.js');
      // --trace-opt is the only flag here: what it traces is what the service set by itself.
      const lean = defer(await startService({ main, node: [process.execPath, ...unitFlags(), '--trace-opt'] }), stop);
      // V8 writes its trace lines through C's stdio, which a pipe buffers until the process exits.
      await lean.stop();
      expect(lean.stdout().some((line) => line.includes('"vendgate ready"'))).toBe(true);
      if (major >= 22) expect(toTurbofan(lean.stdout())).toEqual([]);
      // Node 20's V8 marks a small function for TurboFan sooner: isPosixPathSeparator is, while node
      // loads the entry, before the service sets anything. Nothing else is (Node 20 is not what a
      // release runs).
      else expect(toTurbofan(lean.stdout()).filter((line) => !PATH_FUNCTIONS.test(line))).toEqual([]);

      // `--turbofan` on the command line: the service leaves the compiler on during its start (an
      // operator's flag wins), and Node's path functions, whose budgets were set before any flag of
      // the service's, reach it: TurboFan on Node 20 and 22, Maglev first on Node 24, whose V8 has it on.
      const plain = defer(await startService({ main, node: [process.execPath, '--turbofan', '--trace-opt'] }), stop);
      await plain.stop();
      const optimized = plain.stdout().filter((line) => /\b(?:TURBOFAN(?:_JS)?|MAGLEV)\b/.test(line));
      expect(optimized.some((line) => PATH_FUNCTIONS.test(line))).toBe(true);
    },
  );

  it(
    "turns the optimizing compiler back on once ready: requests after READY=1 reach it, unless the operator's --no-turbofan says otherwise",
    { timeout: 90_000 },
    async () => {
      const main = join(REPO, 'dist', 'vendgate.js');
      // V8's own count of 3,000 from the command line (an operator's flag wins over the service's
      // 80,000), so that a few thousand requests are enough. Node 20 refuses the flag; 3,000 is its default.
      const count = major >= 22 ? ['--invocation-count-for-turbofan=3000'] : [];
      const served = async (extra: string[]): Promise<string[]> => {
        const service = defer(
          await startService({ main, node: [process.execPath, ...unitFlags(), ...count, ...extra, '--trace-opt'] }),
          stop,
        );
        for (let i = 0; i < 4_000; i += 1) {
          const response = await fetch(`${service.localUrl}/healthz`);
          await response.arrayBuffer();
        }
        await service.stop();
        expect(service.stdout().some((line) => line.includes('"vendgate ready"'))).toBe(true);
        // Not Node's path functions: their budgets were renewed under this low count while the
        // compiler was paused, and the stop's own loading spends them.
        return service.stdout().filter((line) => !PATH_FUNCTIONS.test(line));
      };
      // Node 24's V8 has Maglev on, and the pause is TurboFan's alone: there a hot function reaches
      // Maglev first, and TurboFan only when Maglev's compile has finished on a helper thread.
      const optimized = (lines: string[]): string[] =>
        lines.filter((line) => (V8_MAJOR >= 13 ? /\b(?:TURBOFAN(?:_JS)?|MAGLEV)\b/ : /\bTURBOFAN\b/).test(line));
      expect(optimized(await served([])).length).toBeGreaterThan(0);
      expect(toTurbofan(await served(['--no-turbofan']))).toEqual([]);
    },
  );

  it(
    "compiles no baseline code (Sparkplug), where a start with --sparkplug compiles the start's functions",
    { timeout: 90_000 },
    async () => {
      const main = join(REPO, 'dist', 'vendgate.js');
      const trace = '--trace-baseline-batch-compilation';
      const baseline = (lines: string[]): string[] => lines.filter((line) => line.startsWith('[Baseline batch compilation]'));

      const lean = defer(await startService({ main, node: [process.execPath, ...unitFlags(), trace] }), stop);
      await lean.stop();
      expect(lean.stdout().some((line) => line.includes('"vendgate ready"'))).toBe(true);
      const plain = defer(await startService({ main, node: [process.execPath, '--sparkplug', trace] }), stop);
      await plain.stop();
      // Node's own start and the entry's loading, before the service sets --no-sparkplug, queue a few
      // dozen functions (73 on Node 22 here, against 654 with --sparkplug): none of the service's.
      const queued = (lines: string[]): number => baseline(lines).filter((line) => line.includes('Enqueued SFI')).length;
      expect(queued(plain.stdout())).toBeGreaterThan(300);
      expect(queued(lean.stdout())).toBeLessThan(queued(plain.stdout()) / 4);
    },
  );

  it(
    "keeps Node's compiled code for its own modules, where one V8 flag on the command line costs all of it",
    { timeout: 90_000 },
    async () => {
      // NODE_DEBUG_NATIVE=CODE_CACHE: Node says, for each built-in module it loads, whether V8 took
      // the compiled code Node carries for it ("rejected" when V8's flags differ from the build's).
      const main = join(REPO, 'dist', 'vendgate.js');
      const env = { NODE_DEBUG_NATIVE: 'CODE_CACHE' };
      const rejected = (lines: string[]): string[] => lines.filter((line) => /^Code cache of \S+ .* is rejected/.test(line));

      const lean = defer(await startService({ main, node: [process.execPath, ...unitFlags()], env }), stop);
      await lean.stop();
      expect(lean.stdout().some((line) => line.includes('"vendgate ready"'))).toBe(true);
      // The few Node loads after the service has set its flags (import.meta, util.parseArgs…).
      expect(rejected(lean.stderr().split('\n')).length).toBeLessThan(12);

      const flagged = defer(await startService({ main, node: [process.execPath, '--no-sparkplug'], env }), stop);
      await flagged.stop();
      expect(rejected(flagged.stderr().split('\n')).length).toBeGreaterThan(60);
    },
  );
});
