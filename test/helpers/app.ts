import { afterEach } from 'vitest';
import type { App } from '../../src/app.js';
import { tempDir } from './temp.js';

/**
 * In-process apps, each on a fresh temp dir, stopped and the dir removed after the test that made
 * them (registers its own afterEach: call it inside describe()). `build` gets the dir's path.
 */
export function appsPerTest(): (build: (dir: string) => App) => App {
  const made: { app: App; cleanup: () => void }[] = [];
  afterEach(async () => {
    for (const { app, cleanup } of made.splice(0).reverse()) {
      await app.stop();
      cleanup();
    }
  });
  return (build) => {
    const dir = tempDir();
    try {
      const app = build(dir.path);
      made.push({ app, cleanup: dir.cleanup });
      return app;
    } catch (err) {
      dir.cleanup();
      throw err;
    }
  };
}
