import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import type { Actuator, VendOutcome } from '../../src/hardware/index.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { waitFor } from '../helpers/wait.js';
import { appsPerTest } from '../helpers/app.js';

/** An actuator whose every vend fails the way the test says. */
function failingActuator(outcome: VendOutcome): Actuator {
  return {
    kind: 'serial',
    async start() {},
    async fire() {
      return outcome;
    },
    health: () => ({ ok: true, detail: 'scripted' }),
    async stop() {},
  };
}

/**
 * Which failures count toward a jam: the machine's own failure at that slot does; a failure before
 * anything was tried (the line was down, the machine's session was gone) does not — it would take a
 * good slot out of sale for a cable.
 */
describe('what takes a slot out of sale', () => {
  const newApp = appsPerTest();

  async function failThreeTimes(outcome: VendOutcome) {
    const app = newApp((dir) => createApp(testSettings(dir), { logger: silentLogger(), actuator: failingActuator(outcome) }));
    await app.start();
    const ctx = app.context();
    for (let i = 0; i < 3; i++) {
      const order = await ctx.orders.create({ source: 'kiosk', slot: 'A1' });
      await ctx.sandbox!.payments.pay(order.invoice_id!);
      await waitFor(() => ctx.orders.get(order.id)!.state === 'refunded', { what: `order ${order.id} refunded` });
    }
    return ctx;
  }

  it('three machine failures at the slot in a row: out of sale', async () => {
    const ctx = await failThreeTimes({ result: 'failed', reason: 'machine answered "ERR A1 JAM"', slotFault: true });
    expect(ctx.catalog.slots.get('A1')).toMatchObject({ jammed: true, consecutiveFailures: 3, jamReason: 'machine answered "ERR A1 JAM"' });
    await expect(ctx.orders.create({ source: 'kiosk', slot: 'A1' })).rejects.toMatchObject({ code: 'VG_ERR_SLOT_JAMMED' });
  });

  it('three failures before anything was tried (line down): refunded, and the slot stays on sale', async () => {
    const ctx = await failThreeTimes({ result: 'failed', reason: 'serial line down: nothing was sent' });
    expect(ctx.catalog.slots.get('A1')).toMatchObject({ jammed: false, consecutiveFailures: 0 });
    expect((await ctx.orders.create({ source: 'kiosk', slot: 'A1' })).state).toBe('awaiting_payment');
  });
});
