import { describe, expect, it } from 'vitest';
// The soak runner is plain ESM so that `npm run soak` needs no TypeScript; it runs the compiled service.
import { runSoak } from '../../../scripts/soak/run.mjs';

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
      // The run did what it says: customers paid (and every payment was settled, above), the service
      // was killed. Whether a payment is vended or refunded depends on how late it is seen (a payment
      // seen after its QR expired is refunded by design): beside CPU hogs, seed 11 once vended none.
      expect(report.paid, JSON.stringify(report.byState)).toBeGreaterThan(0);
      expect(report.vended + report.refunded + report.uncertain).toBeGreaterThanOrEqual(report.paid);
      expect(report.kills).toBeGreaterThan(0);
    },
    300_000,
  );
});
