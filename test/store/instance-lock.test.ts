import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireInstanceLock, InstanceLockedError, lockPathFor } from '../../src/store/index.js';
import { tempDir } from '../helpers/temp.js';

describe('instance lock (in one process)', () => {
  const dir = tempDir();
  afterEach(() => dir.cleanup());

  it('a second holder in the same process is refused with the pid; after release the lock is free', () => {
    const dbPath = join(dir.path, 'nested', 'vendgate.db');
    const first = acquireInstanceLock(dbPath);
    let refused: unknown;
    try {
      acquireInstanceLock(dbPath);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(InstanceLockedError);
    expect((refused as InstanceLockedError).holderPid).toBe(process.pid);
    expect((refused as InstanceLockedError).lockPath).toBe(lockPathFor(dbPath));
    first.release();
    first.release();
    acquireInstanceLock(dbPath).release();
  });
});
