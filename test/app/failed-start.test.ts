import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App, type AppDeps } from '../../src/app.js';
import { systemClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { testBroker, type TestBroker } from '../helpers/broker.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * What the process holds, as the kernel and Node see it: every open file descriptor (the database,
 * its -wal and -shm, sockets) and every active handle (listening and connected sockets, timers,
 * child processes, file watchers).
 */
interface Held {
  files: string[];
  sockets: string[];
  handles: Record<string, number>;
}

function held(): Held {
  const targets: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      targets.push(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // The descriptor readdir itself used, closed by now.
    }
  }
  const handles: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) handles[kind] = (handles[kind] ?? 0) + 1;
  return {
    files: targets.filter((t) => t.startsWith('/')).sort(),
    sockets: targets.filter((t) => t.startsWith('socket:')).sort(),
    handles,
  };
}

/** What `after` holds that `before` did not (and the handles it holds more of). */
function leftBehind(before: Held, after: Held, dir: string) {
  const handles: Record<string, number> = {};
  for (const [kind, n] of Object.entries(after.handles))
    if (n > (before.handles[kind] ?? 0)) handles[kind] = n - (before.handles[kind] ?? 0);
  return {
    files: after.files.filter((f) => f.startsWith(dir) || !before.files.includes(f)),
    sockets: after.sockets.filter((s) => !before.sockets.includes(s)),
    handles,
  };
}

const NOTHING = { files: [], sockets: [], handles: {} };

describe('a start that fails part-way gives back everything it opened', () => {
  let dir: ReturnType<typeof tempDir> | null = null;
  let broker: TestBroker | null = null;
  /** Closes the broker and removes the directory of the last settingsFor(): after each test, and between the runs of one. */
  async function giveBack(): Promise<void> {
    await broker?.close();
    broker = null;
    dir?.cleanup();
    dir = null;
  }
  afterEach(giveBack);

  /** Every part that holds something: a broker connection, the fiscal sandbox, the scheduled audit read. */
  async function settingsFor() {
    dir = tempDir();
    broker = await testBroker();
    const settings = testSettings(dir.path, {
      mqtt: { url: broker.url, prefix: 'vglife', telemetryIntervalSec: 5 },
      fiscal: { register: 'sandbox' },
    });
    return { ...settings, dex: { ...settings.dex, readEverySec: 3600 } };
  }

  /** Starts and stops one app with `deps`; what the process holds afterwards that it did not before. */
  async function startAndStop({
    onApp,
    ...deps
  }: Partial<AppDeps> & { onApp?: (app: App) => void }): Promise<{ error: unknown; left: ReturnType<typeof leftBehind> }> {
    const settings = await settingsFor();
    const before = held();
    const app = createApp(settings, { logger: silentLogger(), ...deps });
    onApp?.(app);
    let error: unknown = null;
    try {
      await app.start();
    } catch (err) {
      error = err;
    }
    await app.stop();
    const path = dir?.path ?? '';
    // Sockets close on the next turns of the event loop: waited for, then what is left is reported.
    await waitFor(() => JSON.stringify(leftBehind(before, held(), path)) === JSON.stringify(NOTHING), {
      timeoutMs: 5_000,
      what: 'everything given back',
    }).catch(() => {});
    return { error, left: leftBehind(before, held(), path) };
  }

  it('a started and stopped app holds no file, socket, timer or child afterwards (the control)', async () => {
    const run = await startAndStop({});
    expect(run.error).toBeNull();
    expect(run.left).toEqual(NOTHING);
  });

  it('a fault at every step of the start: the start fails with it, and afterwards nothing is held', async () => {
    // The steps are the control run's own, in order: a step added to start() is covered here by itself.
    const steps: string[] = [];
    const control = await startAndStop({ faultAt: (step) => steps.push(step) });
    expect(control.error).toBeNull();
    expect(steps).toEqual(
      expect.arrayContaining(['claimLockAndPorts', 'openStore', 'buildDevice', 'serve', 'goLive', 'dexSchedule', 'ready']),
    );
    const problems: Record<string, unknown> = {};
    for (const at of steps) {
      const run = await startAndStop({
        faultAt: (step) => {
          if (step === at) throw new Error(`injected at ${step}`);
        },
      });
      if (!(run.error instanceof Error) || run.error.message !== `injected at ${at}`) problems[at] = { startFailedWith: String(run.error) };
      else if (JSON.stringify(run.left) !== JSON.stringify(NOTHING)) problems[at] = run.left;
      await giveBack();
    }
    expect(problems).toEqual({});
  });

  it('a stop asked for while the start is still going ends the start and leaves nothing held', async () => {
    let stopWhile: (() => void) | null = null;
    const run = await startAndStop({
      faultAt: (step) => {
        if (step === 'recover') stopWhile?.();
      },
      onApp: (app) => {
        stopWhile = () => void app.stop();
      },
    });
    expect(String(run.error)).toMatch(/stopped while starting/);
    expect(run.left).toEqual(NOTHING);
  });

  it('a clock that fails once the database exists: start fails, and stop gives back the database, its -wal and -shm, and both ports', async () => {
    const settings = await settingsFor();
    const dbPath = join(dir?.path ?? '', 'vendgate.db');
    const clock = {
      now: () => {
        if (existsSync(dbPath)) throw new Error('injected: the clock failed');
        return systemClock.now();
      },
    };
    const before = held();
    const app = createApp(settings, { logger: silentLogger(), clock });
    await expect(app.start()).rejects.toThrow('injected: the clock failed');
    await app.stop();
    await waitFor(() => !held().files.some((f) => f.startsWith(dir?.path ?? '/nowhere')), { timeoutMs: 5_000 }).catch(() => {});
    const left = leftBehind(before, held(), dir?.path ?? '');
    expect(left.files).toEqual([]);
    expect(left.sockets).toEqual([]);
  });
});
