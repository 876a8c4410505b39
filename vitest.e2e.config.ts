import { defineConfig } from 'vitest/config';
import { SYSTEM_TEST_GLOBS } from './test/suites.js';

export default defineConfig({
  test: {
    // The browser, serial, release and fleet tests, and the tests that need root and system packages
    // (mounts, libfaketime, FUSE, Mosquitto: test/suites.ts).
    include: ['test/techniques/e2e/**/*.test.ts', ...SYSTEM_TEST_GLOBS],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Tests that spawn dist/main.js never run an old build: rebuilt (or refused) first.
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
  },
});
