import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { runSelftest } from '../../src/selftest/index.js';
import { createSimActuator } from '../../src/hardware/sim.js';
import { systemClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { byName, failing, fakeExec, onCleanup } from './harness.js';

describe('the selftest inside the running service (MQTT cmd/selftest)', () => {
  it("uses the service's own database, provider and actuator instead of opening a second set", async () => {
    const dir = tempDir();
    onCleanup(dir.cleanup);
    const settings = testSettings(dir.path);
    const actuator = createSimActuator(
      { clock: systemClock },
      { logPath: `${dir.path}/actuations.jsonl`, durationMs: 0, failMode: 'none' },
    );
    const app = createApp(settings, { logger: silentLogger(), actuator });
    const { localUrl } = await app.start();
    onCleanup(() => app.stop());
    const ctx = app.context();
    let healthCalls = 0;
    const watched = {
      ...actuator,
      health: () => {
        healthCalls += 1;
        return actuator.health();
      },
    };

    const { report, notes } = await runSelftest(
      { settings, source: '(in memory)', environment: [], urls: { local: localUrl } },
      { exec: fakeExec(), live: { db: ctx.db, provider: ctx.provider, actuator: watched, inputs: ctx.inputs } },
    );

    expect(failing(report.checks)).toEqual([]);
    expect(byName(report.checks).database!.detail).toMatch(/quick_check ok/);
    expect(byName(report.checks)['local.listener']!.status).toBe('PASS');
    expect(byName(report.checks).actuator).toMatchObject({ status: 'PASS' });
    expect(healthCalls).toBe(1);
    // The service's connection is still open and usable: the selftest closed nothing of it.
    expect(ctx.db.open).toBe(true);
    expect(ctx.db.prepare('SELECT count(*) AS n FROM orders').get()).toEqual({ n: 0 });
    // Stored, but not published from a side connection: the service's own MQTT client does that.
    expect(notes).toEqual(['result stored in the database (meta.selftest_last)']);
  });
});
