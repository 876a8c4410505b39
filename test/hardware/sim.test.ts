import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SimFailMode, type VendRequest } from '../../src/hardware/index.js';
import { createSimActuator } from '../../src/hardware/sim.js';
import { createManualClock } from '../../src/util/index.js';

const request: VendRequest = { orderId: 5, reference: 'test-1-1-5', slot: 'A1', amount: 150, currency: 'MNT', mode: 'vending' };

describe('simulated actuator', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vendgate-sim-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const lines = (logPath: string) =>
    existsSync(logPath)
      ? readFileSync(logPath, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];

  it.each<[SimFailMode, object, number]>([
    ['none', { result: 'vended' }, 1],
    ['fail', { result: 'failed', reason: 'simulated motor jam' }, 0],
    ['nak', { result: 'failed', reason: expect.stringContaining('NAK') }, 0],
    ['not_passed', { result: 'not_passed' }, 0],
    // The machine that vends and never answers: the physical log has the vend, the outcome says unknown.
    ['timeout', { result: 'unknown', detail: expect.stringContaining('no answer') }, 1],
  ])('failMode %s → %j with %i line(s) in the physical log', async (failMode, outcome, count) => {
    const logPath = join(dir, 'actuations.jsonl');
    const sim = createSimActuator({ clock: createManualClock() }, { logPath, durationMs: 0, failMode });
    await sim.start();
    await expect(sim.fire(request)).resolves.toMatchObject(outcome);
    expect(lines(logPath)).toHaveLength(count);
    await sim.stop();
  });
});
