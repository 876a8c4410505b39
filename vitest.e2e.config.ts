import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/techniques/e2e/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Tests that spawn dist/main.js never run an old build: rebuilt (or refused) first.
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
  },
});
