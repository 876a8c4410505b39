import { defineConfig } from 'vitest/config';
import { coverage } from './vitest.coverage.js';
import HarnessWeightSequencer from './test/sequencer.js';
import { ISOLATED_TEST_FILES, SYSTEM_TEST_GLOBS } from './test/suites.js';

// The tests that need root and system packages run with the e2e suite (test/suites.ts).
const EXCLUDE = ['test/techniques/e2e/**', 'node_modules/**', ...SYSTEM_TEST_GLOBS];

export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Tests that spawn dist/main.js never run an old build: rebuilt (or refused) first.
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    // Long files first also on a fresh clone, where vitest has no durations (test/sequencer.ts).
    sequence: { sequencer: HarnessWeightSequencer },
    // `npm test` passes --coverage: the money path's floors (vitest.coverage.ts) over the whole suite.
    coverage,
    // As in the unit suite (vitest.unit.config.ts, which says why and which files): a worker keeps its
    // module graph from one file to the next instead of importing src/ and its dependencies again for
    // each of ~240 files; the few files that need a graph of their own run isolated.
    projects: [
      {
        extends: true,
        test: { name: 'full', include: ['test/**/*.test.ts'], exclude: [...EXCLUDE, ...ISOLATED_TEST_FILES], isolate: false },
      },
      { extends: true, test: { name: 'full-isolated', include: ISOLATED_TEST_FILES, exclude: EXCLUDE, isolate: true } },
    ],
  },
});
