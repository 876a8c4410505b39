import { defineConfig } from 'vitest/config';
import { NODE_LINE_GLOBS } from './test/suites.js';

// `npm run test:node-line`: the tests whose outcome can change with the Node version (native modules,
// the bundle, the built service, Node's own HTTP and crypto under the money path). CI runs them on
// Node 22 and 24 (scripts/ci/node-lts.sh) after the whole suite has passed on this checkout's Node.
export default defineConfig({
  test: {
    include: NODE_LINE_GLOBS,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
  },
});
