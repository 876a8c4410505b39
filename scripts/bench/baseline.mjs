import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
/**
 * Where the baselines' commits are read from: this checkout, or VENDGATE_BENCH_GIT when the bench
 * runs in a copy that has no history (scripts/ci/node-lts.sh's copies, to measure on the Node line a
 * release ships with: docs/benchmarks.md).
 */
const GIT = process.env.VENDGATE_BENCH_GIT ?? ROOT;

/**
 * A build of an older commit, for figures measured "before and after in the same run": the commit's
 * tree from `git archive` (no worktree, nothing in the repository changes), this checkout's
 * node_modules linked in (the dependencies are pinned and the same), compiled once and kept in the
 * temporary directory under the commit's id. Returns the path of its dist/main.js. A commit whose
 * dependencies are no longer all installed cannot be built this way (5eec3ce needs @fastify/static,
 * removed since): the benches compare with 09b554b, the code before the one-file build.
 */
export function baselineBuild(ref, log = () => {}) {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: GIT, encoding: 'utf8' }).trim();
  // One per Node ABI: its node_modules link is the running checkout's, native modules built for that Node.
  const dir = join(tmpdir(), `vendgate-baseline-${sha.slice(0, 12)}-node${process.versions.modules}`);
  const main = join(dir, 'dist', 'main.js');
  if (existsSync(main)) return { sha, dir, main };
  log(`building the baseline ${sha.slice(0, 12)} in ${dir} (once)`);
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${sha} | tar -x -C "${dir}"`], { cwd: GIT, stdio: ['ignore', 'ignore', 'inherit'] });
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json')], {
    cwd: dir,
    stdio: 'inherit',
  });
  execFileSync(process.execPath, [join(dir, 'scripts', 'copy-assets.mjs')], { cwd: dir, stdio: 'inherit' });
  return { sha, dir, main };
}
