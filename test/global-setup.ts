/**
 * vitest globalSetup of the full suite: 13 test files spawn `node dist/main.js`, so an edit of src/
 * that was not rebuilt would be tested against the old build without a word. Before any test runs,
 * dist/ is checked against the sources (scripts/build-stamp.mjs); a stale build is rebuilt, and if
 * the rebuild fails the run stops here. VENDGATE_TEST_NO_BUILD=1 refuses a stale build instead of
 * building (for CI steps that must test exactly the build they were given).
 */
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;

function distIsFresh(): boolean {
  return spawnSync(process.execPath, ['scripts/build-stamp.mjs', '--check'], { cwd: root, stdio: 'ignore' }).status === 0;
}

export default function ensureFreshBuild(): void {
  if (distIsFresh()) return;
  if (process.env.VENDGATE_TEST_NO_BUILD === '1') {
    throw new Error('dist/ is older than src/ and VENDGATE_TEST_NO_BUILD=1: run `npm run build` before these tests');
  }
  console.log('dist/ is older than src/: running `npm run build` before the tests');
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0 || !distIsFresh()) {
    throw new Error('dist/ is older than src/ and `npm run build` failed: the tests that spawn dist/main.js would test an old build');
  }
}
