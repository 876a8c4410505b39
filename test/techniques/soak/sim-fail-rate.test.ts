import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimActuator } from '../../../src/hardware/sim.js';
import { systemClock } from '../../../src/util/clock.js';
import { testSettings } from '../../helpers/core.js';
import { tempDir } from '../../helpers/temp.js';

/** The soak's "machine that sometimes fails": a seeded share of actuations fails, the rest deliver. */
describe('sim actuator failRate', () => {
  const dirs: ReturnType<typeof tempDir>[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) d.cleanup();
  });

  async function outcomes(failRate: number | undefined, failSeed: number, failMode: 'none' | 'nak' = 'none') {
    const dir = tempDir();
    dirs.push(dir);
    const actuator = createSimActuator(
      { clock: systemClock },
      { logPath: join(dir.path, 'a.jsonl'), durationMs: 0, failMode, failRate, failSeed },
    );
    await actuator.start();
    const results: string[] = [];
    for (let i = 1; i <= 400; i += 1) {
      const outcome = await actuator.fire({ orderId: i, reference: `r-${i}`, slot: 'A1', amount: 1, currency: 'MNT', mode: 'vending' });
      results.push(outcome.result === 'failed' ? `failed:${outcome.reason}` : outcome.result);
    }
    return results;
  }

  it('fails about the configured share and replays the same sequence with the same seed', async () => {
    const first = await outcomes(0.25, 7);
    const failed = first.filter((r) => r.startsWith('failed')).length;
    expect(failed).toBeGreaterThan(60);
    expect(failed).toBeLessThan(140);
    expect(await outcomes(0.25, 7)).toEqual(first);
    expect(await outcomes(0.25, 8)).not.toEqual(first);
  });

  it('uses failMode for the failures it draws, and without failRate every actuation follows failMode', async () => {
    expect((await outcomes(0.5, 3, 'nak')).filter((r) => r.startsWith('failed')).every((r) => r.includes('NAK'))).toBe(true);
    expect(new Set(await outcomes(undefined, 1, 'none'))).toEqual(new Set(['vended']));
  });

  it('the settings accept a share between 0 and 1 only', () => {
    const dir = tempDir();
    dirs.push(dir);
    const withRate = (failRate: number) =>
      testSettings(dir.path, { actuator: { kind: 'sim', sim: { logPath: join(dir.path, 'a.jsonl'), failRate } } });
    expect(withRate(0.1).actuator.sim.failRate).toBe(0.1);
    expect(() => withRate(1.5)).toThrow(/actuator\.sim\.failRate/);
  });
});
