import { defineConfig } from 'vitest/config';
import { coverage } from './vitest.coverage.js';
import HarnessWeightSequencer from './test/sequencer.js';
import { SYSTEM_TEST_GLOBS } from './test/suites.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The tests that need root and system packages run with the e2e suite (test/suites.ts).
    exclude: ['test/techniques/e2e/**', 'node_modules/**', ...SYSTEM_TEST_GLOBS],
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
  },
});
