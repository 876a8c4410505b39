import { defineConfig } from 'vitest/config';
import { coverage } from './vitest.coverage.js';
import HarnessWeightSequencer from './test/sequencer.js';
import { REAL_TIME_TEST_FILES, SYSTEM_TEST_GLOBS, serviceTestFiles } from './test/suites.js';

// `npm run test:unit`: everything that starts no child process and no browser (test/suites.ts
// decides from the imports), less the few that wait on real socket timeouts by design.
// Needs no build (nothing here runs dist/), so no globalSetup.
//
// `npm run test:coverage` is this run with v8 coverage of src/ and the money path's floors
// (vitest.coverage.ts); `npm test` measures the same over the whole suite.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [
      'test/techniques/e2e/**',
      'node_modules/**',
      ...serviceTestFiles(import.meta.dirname),
      ...REAL_TIME_TEST_FILES,
      ...SYSTEM_TEST_GLOBS,
    ],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Worker threads: ~10 % faster here than forks (measured: 49.6 s vs 55.7 s at the same load),
    // and nothing in this part needs a process of its own. The full suite stays on forks.
    pool: 'threads',
    maxWorkers: 2,
    // Long files first also on a fresh clone, where vitest has no durations (test/sequencer.ts).
    sequence: { sequencer: HarnessWeightSequencer },
    coverage,
  },
});
