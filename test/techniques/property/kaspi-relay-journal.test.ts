import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSimulator, NO_FAULTS } from '../../../src/simulator/index.js';
import { createProvider, type PaymentProvider } from '../../../src/payments/index.js';
import { kaspiExternalId } from '../../../src/payments/adapters.js';
import { parseSettings } from '../../../src/settings/index.js';
import { silentLogger } from '../../../src/util/index.js';
import { KASPI_DEVICE_SECRET, startKaspiRelayFor } from '../../helpers/kaspi-relay.js';
import { tempDir } from '../../helpers/temp.js';
import { join } from 'node:path';

/**
 * Kaspi's create and return are not idempotent, so the relay's journal is the money rule: for any
 * sequence of creates (new attempts and repeats, from this process or after a restart), returns
 * (new keys and repeats), Kaspi faults (lost answers, timeouts, 5xx, 429) and relay restarts, Kaspi
 * takes no ExternalId and no return key twice (a 429 is refused before it is taken, so the same one
 * may follow it; anything else that reached Kaspi is never sent again), no QR is shown that Kaspi
 * did not make for this attempt, and no more is returned than was paid.
 */
const RUNS = Number(process.env.KASPI_PROPERTY_RUNS ?? 12);
const RETURN_PATH = '/r3/v01/payment/return';

type Step =
  | { kind: 'create'; attempt: number }
  | { kind: 'pay'; attempt: number }
  | { kind: 'return'; attempt: number; key: number; amount: number }
  | { kind: 'faults'; fault: 'none' | 'lostResponse' | 'serverError' | 'rateLimit' | 'timeout' }
  | { kind: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('create' as const), attempt: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('pay' as const), attempt: fc.integer({ min: 0, max: 3 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('return' as const),
      attempt: fc.integer({ min: 0, max: 3 }),
      key: fc.integer({ min: 0, max: 2 }),
      amount: fc.constantFrom(300, 700, 1500),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('faults' as const),
      fault: fc.constantFrom('none' as const, 'lostResponse' as const, 'serverError' as const, 'rateLimit' as const, 'timeout' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const) }) },
);

describe('property: the Kaspi relay journal', () => {
  it('Kaspi never takes an ExternalId or a return key twice, never shows a QR it did not make, never returns more than was paid', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 25 }), async (steps) => {
        const dir = tempDir('vendgate-kaspi-prop-');
        const sim = createSimulator({ provider: 'kaspi', currency: 'KZT', seed: 9, expirySweepMs: 0 });
        await sim.start();
        const journalPath = join(dir.path, 'kaspi.db');
        let relay = await startKaspiRelayFor(sim, { journalPath, kaspiTimeoutMs: 150 });
        const device = (): Promise<PaymentProvider> =>
          createProvider(
            { clock: { now: () => Date.now() }, logger: silentLogger(), random: () => 0.5, sleep: async () => {} },
            parseSettings({
              device: { id: 'vm-001', currency: 'KZT', catalog: [{ slot: 'A1', name: 'Cola', price: 1500 }] },
              provider: {
                name: 'kaspi',
                baseUrl: relay.url,
                clientSecret: KASPI_DEVICE_SECRET,
                requestTimeoutMs: 3_000,
                createDeadlineMs: 1_000,
              },
            }),
          );
        let provider = await device();
        const shown = new Map<number, string>();
        const returnedKeys = new Map<string, string>();
        // Kaspi's return carries no key (DeviceToken, QrPaymentId, Amount), so which key a request was
        // for is told by when it came: the steps run one at a time, and each return request the
        // simulator records during a device's return is that return's key. A 429 is refused before
        // Kaspi takes it (the simulator's rateLimit fault answers before the handler runs, and it
        // answers 429 for nothing else), so only the others count as taken.
        const takenReturns = () => sim.records().requests.filter((r) => r.path === RETURN_PATH && r.status !== 429).length;
        const takenPerKey = new Map<string, number>();
        try {
          for (const s of steps) {
            if (s.kind === 'faults') sim.setFaults(s.fault === 'none' ? { ...NO_FAULTS } : { ...NO_FAULTS, [s.fault]: 0.5 });
            else if (s.kind === 'restart') {
              await relay.stop().catch(() => {});
              // The relay's journal survives; the device process restarts too (its memory is empty).
              relay = await startKaspiRelayFor(sim, { journalPath, kaspiTimeoutMs: 150 });
              provider = await device();
            } else if (s.kind === 'create') {
              const key = `vm-001-db1-${s.attempt}-pay`;
              const invoice = await provider
                .createInvoice({
                  idempotencyKey: key,
                  reference: `vm-001-db1-${s.attempt}`,
                  amount: 1500,
                  currency: 'KZT',
                  description: 'Cola',
                  expiresInSec: 120,
                  captureMode: 'automatic',
                })
                .catch(() => null);
              if (invoice) {
                const made = sim.records().invoices.find((i) => i.id === invoice.id);
                expect(made?.idempotencyKey, 'a QR shown for this attempt was made by Kaspi for its ExternalId').toBe(kaspiExternalId(key));
                const before = shown.get(s.attempt);
                if (before !== undefined) expect(invoice.id).toBe(before);
                shown.set(s.attempt, invoice.id);
              }
            } else if (s.kind === 'pay') {
              const id = shown.get(s.attempt);
              if (id) await sim.pay(id).catch(() => {});
            } else {
              const id = shown.get(s.attempt);
              if (!id) continue;
              const key = `r-${s.attempt}-${s.key}`;
              // One return key is one return: the core never reuses a key for another amount.
              if (returnedKeys.has(key) && returnedKeys.get(key) !== `${id}:${s.amount}`) continue;
              returnedKeys.set(key, `${id}:${s.amount}`);
              const before = takenReturns();
              await provider.refund({ invoiceId: id, amount: s.amount, idempotencyKey: key }).catch(() => null);
              takenPerKey.set(key, (takenPerKey.get(key) ?? 0) + takenReturns() - before);
            }
          }
          const records = sim.records();
          // No ExternalId reached Kaspi twice: only a 429 (refused before it was taken) may be followed by the same one.
          const taken = records.createCalls.filter((c) => c.outcome !== 'fault:rateLimit');
          const perKey = new Map<string, number>();
          for (const c of taken) perKey.set(String(c.idempotencyKey), (perKey.get(String(c.idempotencyKey)) ?? 0) + 1);
          for (const [key, count] of perKey) expect(count, `ExternalId ${key} reached Kaspi ${count} times`).toBe(1);
          // A timed-out create also reached Kaspi (the handler runs later or not): at most one invoice per ExternalId.
          const invoicesPerKey = new Map<string, number>();
          for (const i of records.invoices)
            invoicesPerKey.set(String(i.idempotencyKey), (invoicesPerKey.get(String(i.idempotencyKey)) ?? 0) + 1);
          for (const [key, count] of invoicesPerKey) expect(count, `ExternalId ${key} made ${count} QRs`).toBe(1);
          // Returns: no key taken twice (the same one again after a 429 is the same return, not a second), never more than was paid.
          for (const [key, count] of takenPerKey) expect(count, `return key ${key} taken by Kaspi ${count} times`).toBeLessThanOrEqual(1);
          const returnsTaken = records.requests.filter((r) => r.path === RETURN_PATH && r.status !== 429);
          expect(returnsTaken.length, 'every return Kaspi took was a device return').toBe(
            [...takenPerKey.values()].reduce((a, b) => a + b, 0),
          );
          const returnedPer = new Map<string, number>();
          for (const r of records.refunds) returnedPer.set(r.invoiceId, (returnedPer.get(r.invoiceId) ?? 0) + r.amount);
          for (const [, sum] of returnedPer) expect(sum).toBeLessThanOrEqual(1500);
        } finally {
          await relay.stop().catch(() => {});
          await sim.stop();
          dir.cleanup();
        }
      }),
      { numRuns: RUNS },
    );
  }, 240_000);
});
