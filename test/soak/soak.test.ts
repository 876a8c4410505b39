import { describe, expect, it } from 'vitest';
// The soak runner is plain ESM so that `npm run soak` needs no TypeScript; it runs the compiled service.
import { runSoak } from '../../scripts/soak/run.mjs';

/**
 * A small seeded soak in every `npm test`: the real service (dist/, built by `npm test`) against the
 * Gerege simulator with every fault, SIGKILLed every ~2 s, a sim actuator that fails 10 % of the
 * time, and an MQTT broker that stops and starts. The verdict comes from the database, the
 * simulator's records, the actuator log and the broker's record (scripts/soak/verify.mjs).
 * `npm run soak -- --orders 10000 --faults all` is the full-size run.
 */
const SEEDS = (process.env.SOAK_SEEDS ?? '11,12').split(',').map(Number);

describe('soak: the real service under every fault, kills and a flapping broker', () => {
  it.each(SEEDS)(
    'seed %i: one vend per order, every payment settled, one invoice per order, every MQTT event delivered',
    async (seed) => {
      const report = await runSoak({ orders: 15, faults: 'all', killEverySec: 2, seed, failRate: 0.1, drainTimeoutMs: 120_000 });
      expect(
        report.violations,
        JSON.stringify({ byState: report.byState, kills: report.kills, mqtt: report.mqtt, catalog: report.catalog }, null, 2),
      ).toEqual([]);
      expect(report.doubleVends).toBe(0);
      expect(report.paidButUnsettled).toBe(0);
      expect(report.refundsLeftToPerson).toBe(0);
      expect(report.uncertain).toBeLessThanOrEqual(report.killsWhileFiring);
      expect(report.extraInvoices).toBe(0);
      expect(report.mqtt.missing).toBe(0);
      // The run did what it says: customers paid, the machine delivered, the service was killed.
      expect(report.vended).toBeGreaterThan(0);
      expect(report.kills).toBeGreaterThan(0);
    },
    300_000,
  );
});
