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
    // Two files at a time. With one, the second core sat idle for the last seven minutes of CI once
    // the Node 22/24 passes beside this suite were done (measured 2026-12-06: e2e 719 s, the Node
    // passes over after ~300 s). The files already pass with a second suite beside them (ports from
    // freePort(), their own temp dirs and mounts; the shared release build waits on its lock).
    maxWorkers: 2,
  },
});
