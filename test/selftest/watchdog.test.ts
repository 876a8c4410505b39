import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/store/index.js';
import { databaseProbe, startWatchdog, watchdogIntervalMs } from '../../src/selftest/index.js';
import { tempDir } from '../helpers/temp.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('systemd watchdog', () => {
  it('pings at a third of WATCHDOG_USEC, and only when systemd asked this very process', () => {
    expect(watchdogIntervalMs({}, 42)).toBeNull();
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '0' }, 42)).toBeNull();
    expect(watchdogIntervalMs({ WATCHDOG_USEC: 'soon' }, 42)).toBeNull();
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '30000000' }, 42)).toBe(10_000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '42' }, 42)).toBe(10_000);
    // A child that inherited the environment is not the watched process.
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '41' }, 42)).toBeNull();
  });

  it('pings only on ticks whose health probe succeeds, and never after stop()', () => {
    vi.useFakeTimers();
    const sent: string[] = [];
    let healthy = true;
    const failures: unknown[] = [];
    const watchdog = startWatchdog({
      intervalMs: 1_000,
      probe: () => {
        if (!healthy) throw new Error('database is locked');
      },
      notify: (state) => sent.push(state),
      onUnhealthy: (err) => failures.push(err),
    });

    expect(sent).toEqual([]);
    vi.advanceTimersByTime(3_000);
    expect(sent).toEqual(['WATCHDOG=1', 'WATCHDOG=1', 'WATCHDOG=1']);

    healthy = false;
    vi.advanceTimersByTime(5_000);
    expect(sent).toHaveLength(3);
    expect(failures).toHaveLength(5);

    healthy = true;
    vi.advanceTimersByTime(1_000);
    expect(sent).toHaveLength(4);

    watchdog.stop();
    watchdog.stop();
    vi.advanceTimersByTime(10_000);
    expect(sent).toHaveLength(4);
  });

  it('the database probe reads the real file, fails when it is gone or replaced, and recovers when it is back', () => {
    const dir = tempDir();
    try {
      const path = join(dir.path, 'vendgate.db');
      openDatabase(path).close();
      const service = openDatabase(path); // the service's own connection keeps the file in WAL mode
      const probe = databaseProbe(path);

      expect(() => probe.probe()).not.toThrow();

      renameSync(path, `${path}.moved`);
      expect(() => probe.probe()).toThrow();
      renameSync(`${path}.moved`, path);
      expect(() => probe.probe()).not.toThrow();

      // Replaced by another file (a restore copied over it): a new inode under the same name.
      service.close();
      probe.close();
      const copy = `${path}.copy`;
      writeFileSync(copy, 'not a database at all');
      const fresh = databaseProbe(path);
      expect(() => fresh.probe()).not.toThrow();
      rmSync(path);
      renameSync(copy, path);
      expect(() => fresh.probe()).toThrow();
      fresh.close();
    } finally {
      dir.cleanup();
    }
  });
});
