import { afterEach, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Db } from '../../src/store/index.js';
import { createManualClock } from '../../src/util/clock.js';
import { createLogger } from '../../src/util/logger.js';
import { createOutbox } from '../../src/outbox/index.js';
import { createOrderRepository, createProviderHealth } from '../../src/orders/index.js';
import { createMoneyPath } from '../../src/money/index.js';
import { createFakeProvider } from '../fakes/provider.js';
import { testMachine, testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';

/**
 * The housekeeping tick must never end the process: a read the card cannot answer is reported to the
 * storage monitor when it is a storage fault, and logged otherwise; the next tick runs as before.
 * These cases were reached before only when a storage test's tick happened to land in its fault
 * window, so the money path's branch coverage moved between runs.
 */
describe('money path housekeeping: a tick that throws', () => {
  let cleanup: (() => void) | null = null;
  afterEach(() => {
    vi.useRealTimers();
    cleanup?.();
  });

  function build(reportAs: (err: unknown) => 'fault' | null) {
    const dir = tempDir();
    const settings = testSettings(dir.path);
    const clock = createManualClock();
    const db: Db = openDatabase(settings.storage.path);
    const lines: string[] = [];
    const reported: unknown[] = [];
    let ticks = 0;
    const money = createMoneyPath(
      {
        db,
        clock,
        logger: createLogger({ level: 'info', destination: { write: (l: string) => lines.push(l) } as never }),
        outbox: createOutbox({ db, clock, deviceId: settings.device.id }),
        provider: createFakeProvider({ now: clock.now }).provider,
        actuator: testMachine('test machine', async () => ({ result: 'vended' })),
        orderRepository: createOrderRepository({ db, clock }),
        health: createProviderHealth(clock),
        outOfService: () => null,
        storage: {
          report(err) {
            reported.push(err);
            return reportAs(err) === 'fault' ? ({ kind: 'read_only' } as never) : null;
          },
          fault: () => null,
          describe: () => 'test card',
        },
        events: {
          tick() {
            ticks += 1;
            throw new Error(`tick ${ticks} could not read`);
          },
        },
      },
      settings,
    );
    cleanup = () => {
      void money.stop();
      db.close();
      dir.cleanup();
    };
    return { money, lines, reported, ticks: () => ticks };
  }

  it('a storage fault is reported, not logged as a failed tick, and the next tick runs', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { money, lines, reported, ticks } = build(() => 'fault');
    await money.recover();
    money.start();
    vi.advanceTimersByTime(100); // the test settings poll every 100 ms: housekeeping ticks as often
    vi.advanceTimersByTime(100); // the test settings poll every 100 ms: housekeeping ticks as often
    expect(ticks()).toBe(2);
    expect(reported.map((e) => String(e))).toEqual(['Error: tick 1 could not read', 'Error: tick 2 could not read']);
    expect(lines.join('')).not.toContain('housekeeping tick failed');
  });

  it('anything else is logged and the next tick runs', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { money, lines, reported, ticks } = build(() => null);
    await money.recover();
    money.start();
    vi.advanceTimersByTime(100); // the test settings poll every 100 ms: housekeeping ticks as often
    vi.advanceTimersByTime(100); // the test settings poll every 100 ms: housekeeping ticks as often
    expect(ticks()).toBe(2);
    expect(reported).toHaveLength(2);
    expect(lines.filter((l) => l.includes('housekeeping tick failed'))).toHaveLength(2);
  });
});
