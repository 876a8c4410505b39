import { afterEach, beforeEach } from 'vitest';
import { accessSync, constants, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory under the OS temp dir; removed by the returned cleanup. */
export function tempDir(prefix = 'vendgate-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * For a describe: a fresh temp directory before each test, removed after it (registers its own
 * beforeEach and afterEach). Returns the current test's path.
 */
export function tempDirPerTest(prefix?: string): () => string {
  let dir: ReturnType<typeof tempDir> | undefined;
  beforeEach(() => {
    dir = tempDir(prefix);
  });
  afterEach(() => dir?.cleanup());
  return () => {
    if (!dir) throw new Error('tempDirPerTest: the directory is made in beforeEach');
    return dir.path;
  };
}

const TMPFS_MAGIC = 0x01021994;

/**
 * A fresh directory in memory (/dev/shm when it is a writable tmpfs, else the OS temp dir), for tests
 * whose SQLite files stand for nothing on a disk: an fsync there costs nothing, where on this
 * machine's disk each durable commit, close and VACUUM INTO waits for one. Only for tests that model
 * durability themselves (test/techniques/property/world.ts keeps the image of the last synced commit):
 * what a real card keeps is proven on real file systems (test/storage/, test/techniques/power-cut/).
 */
export function memoryTempDir(prefix = 'vendgate-test-'): { path: string; cleanup: () => void } {
  try {
    accessSync('/dev/shm', constants.W_OK);
    if (statfsSync('/dev/shm').type === TMPFS_MAGIC) {
      const path = mkdtempSync(join('/dev/shm', prefix));
      return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
    }
  } catch {
    // No /dev/shm here: the OS temp dir does the same, only slower.
  }
  return tempDir(prefix);
}
