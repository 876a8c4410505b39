import { defineConfig } from 'vitest/config';
import { coverage } from './vitest.coverage.js';
import HarnessWeightSequencer from './test/sequencer.js';
import { ISOLATED_TEST_FILES, REAL_TIME_TEST_FILES, SYSTEM_TEST_GLOBS, serviceTestFiles } from './test/suites.js';

// `npm run test:unit`: everything that starts no child process and no browser (test/suites.ts
// decides from the imports), less the few that wait on real socket timeouts by design.
// Needs no build (nothing here runs dist/), so no globalSetup.
//
// `npm run test:coverage` is this run with v8 coverage of src/ and the money path's floors
// (vitest.coverage.ts); `npm test` measures the same over the whole suite.
const exclude = [
  'test/techniques/e2e/**',
  'node_modules/**',
  ...serviceTestFiles(import.meta.dirname),
  ...REAL_TIME_TEST_FILES,
  ...SYSTEM_TEST_GLOBS,
];

// Files that need a module graph and a process of their own (ISOLATED_TEST_FILES in test/suites.ts
// says which and why) run isolated, in forked processes. Every other file shares its worker's (isolate: false). Importing src/ and its dependencies again
// for each of ~140 files was most of this run: measured at the same load (00:00 UTC, load ~15, other
// sessions running), 330 s with isolation (203 s of it importing) against 141 s without (13 s
// importing). What a file must not leak to the next (fake timers, stubbed globals) each file
// already undoes in afterEach.
const ISOLATED = ISOLATED_TEST_FILES;

export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Worker threads: ~10 % faster here than forks (measured: 49.6 s vs 55.7 s at the same load),
    // and nothing in this part needs a process of its own. The full suite stays on forks.
    pool: 'threads',
    maxWorkers: 2,
    // Long files first also on a fresh clone, where vitest has no durations (test/sequencer.ts).
    sequence: { sequencer: HarnessWeightSequencer },
    coverage,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [...exclude, ...ISOLATED], isolate: false } },
      { extends: true, test: { name: 'unit-isolated', include: ISOLATED, exclude, isolate: true, pool: 'forks' } },
    ],
  },
});
