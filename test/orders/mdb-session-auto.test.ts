import { describe, expect, it } from 'vitest';
import { buildCore } from '../helpers/core.js';
import { mdbAppPerTest } from '../helpers/mdb-app.js';
import { waitFor } from '../helpers/wait.js';

/**
 * `actuator.serial.mdb.session: auto` in process (the whole app, the real MDB profile on serialport's
 * mock line): the order service asks the actuator which session style is in force for every kiosk
 * order. Before the board reports the machine's setup, authorization first (every MDB machine can
 * begin a session on the reader's word); once the machine says always idle is on, the customer
 * chooses on the machine and the kiosk takes no order. The same over a real pty and the VMC model:
 * test/techniques/e2e/mdb/machine-setup.test.ts.
 */
describe('an MDB machine with the session style learned from its setup (session: auto)', () => {
  const start = mdbAppPerTest();

  it('takes kiosk orders (authorization first) until the machine reports always idle on, then refuses them', async () => {
    const { mock, hardware, localUrl, ctx } = await start({ session: 'auto' });
    const order = () =>
      fetch(`${localUrl}/api/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"slot":"A1"}' });

    // No setup report yet: authorization first, so a kiosk order is money the machine can be told about.
    expect(hardware.actuator.sessionStyle?.()).toBe('authorization-first');

    // Level 3, MNT (1 + ISO 496), scale 1, no decimals, 30 s, options 0x20: always idle is on, so the
    // customer chooses on the machine and the kiosk takes no money.
    mock.emit('c,SETUP,3,1496,1,0,30,20\r\n');
    await waitFor(() => hardware.actuator.sessionStyle?.() === 'always-idle', { what: 'always idle in force' });
    const refused = await order();
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: { code: 'VG_ERR_CHOOSE_ON_MACHINE' } });
    expect(ctx.orders.latest()).toBeUndefined();

    // The machine reset with always idle switched off: authorization first again, the kiosk sells.
    mock.emit('c,SETUP,3,1496,1,0,30,00\r\n');
    await waitFor(() => hardware.actuator.sessionStyle?.() === 'authorization-first', { what: 'authorization first in force' });
    const taken = await order();
    expect(taken.status).toBe(201);
    expect(ctx.orders.latest()).toMatchObject({ source: 'kiosk', slot: 'A1', state: 'awaiting_payment' });
  });

  it("an actuator that reports no style (nothing learned) leaves the configured one in force: always idle refuses a kiosk order, takes the machine's", async () => {
    const core = buildCore({
      actuator: { kind: 'serial', serial: { path: '/dev/null', profile: 'mdb', mdb: { session: 'always-idle' } } },
    });
    try {
      await expect(core.orders.create({ source: 'kiosk', slot: 'A1' })).rejects.toMatchObject({ code: 'VG_ERR_CHOOSE_ON_MACHINE' });
      expect(core.count('SELECT count(*) AS n FROM orders')).toBe(0);
    } finally {
      core.close();
    }
  });
});
