import { afterEach, describe, expect, it } from 'vitest';
import { startService } from '../../../helpers/service.js';
import { mdbStack, type MdbStack } from './harness.js';

/**
 * The MDB contract, always idle (the customer selects on the machine first), against the VMC model
 * on a real pty and the real service: the price charged is the catalog's, the board's boot comes up
 * once, and no approval leaves after the machine has given up.
 */
describe('MDB always idle against a VMC model', () => {
  let stack: MdbStack | null = null;
  afterEach(async () => {
    await stack?.stop();
    stack = null;
  });

  async function enabled(s: MdbStack) {
    await s.waitFor(() => s.pty.vmc.state === 'enabled', { what: 'the VMC to enable the reader' });
  }

  it('comes up once through INACTIVE, DISABLED, ENABLED, and sells at the catalog price: one charge, one vend', async () => {
    const s = (stack = await mdbStack());
    await enabled(s);
    expect(s.pty.vmc.select('12', '2800')).toBe(true);
    const order = await s.waitFor(() => s.orders().find((o) => o.state === 'awaiting_payment'), { what: 'the order' });
    expect(order).toMatchObject({ source: 'mdb', slot: '12', amount: 2800 });
    await s.pay(order);
    await s.waitFor(() => s.orders()[0]?.state === 'vended', { what: 'the vend' });
    expect(s.pty.vmc.dispensed).toEqual([{ item: '12', approved: '12@2800' }]);
    expect(s.pty.vmc.received.filter((l) => l === 'C,1')).toHaveLength(1);
    expect(s.pty.vmc.resets).toBe(0);
    expect(s.refunds()).toEqual([]);
  });

  it('a machine asking 200 for an item the catalog sells at 2800 is denied, with an alarm naming both prices', async () => {
    const s = (stack = await mdbStack());
    await enabled(s);
    s.pty.vmc.select('12', '200');
    await s.waitFor(() => s.pty.vmc.denies.length === 1, { what: 'the deny' });
    expect(s.orders()).toEqual([]);
    const alarm = await s.waitFor(() => s.alarms().find((a) => a.name === 'mdb_price_mismatch/12'), { what: 'the alarm' });
    expect(alarm.message).toMatch(/200/);
    expect(alarm.message).toMatch(/2800/);
    expect(s.pty.vmc.dispensed).toEqual([]);
  });

  it("with machine prices chosen, the machine's price is charged inside the pricing bounds and denied outside them", async () => {
    const s = (stack = await mdbStack({ mdb: { prices: 'machine' }, config: { pricing: { floor: 1000, ceiling: 5000 } } }));
    await enabled(s);
    s.pty.vmc.select('12', '200');
    await s.waitFor(() => s.pty.vmc.denies.length === 1, { what: 'the deny below the floor' });
    expect(s.orders()).toEqual([]);
    await s.waitFor(() => s.pty.vmc.state === 'enabled', { what: 'the machine back to enabled' });
    s.pty.vmc.select('12', '3000');
    const order = await s.waitFor(() => s.orders().find((o) => o.state === 'awaiting_payment'), { what: 'the order' });
    expect(order.amount).toBe(3000);
  });

  it('an unpaid request is denied before the machine gives up, and its invoice runs out no later', async () => {
    // The machine reports a 6 s limit in its setup: vendgate keeps a margin below it.
    const s = (stack = await mdbStack({ vmc: { vendTimeoutMs: 6_000 } }));
    await enabled(s);
    s.pty.vmc.select('13', '3500');
    const order = await s.waitFor(() => s.orders().find((o) => o.state === 'awaiting_payment'), { what: 'the order' });
    expect(order.expires_at! - order.created_at).toBeLessThanOrEqual(6_000);
    await s.waitFor(() => s.pty.vmc.denies.length === 1, { timeoutMs: 20_000, what: 'the deny' });
    expect(s.pty.vmc.gaveUp).toEqual([]);
    await s.waitFor(() => ['canceled', 'expired'].includes(s.orders()[0]!.state), { what: 'the order closed unpaid' });
    expect(s.pty.vmc.dispensed).toEqual([]);
  });

  it('the kiosk takes no order the machine cannot be told about, and its screen says to choose on the machine', async () => {
    const s = (stack = await mdbStack());
    await enabled(s);
    const res = await fetch(`${s.svc.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: '12' }),
    });
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: { code: 'VG_ERR_CHOOSE_ON_MACHINE' } });
    expect(s.orders()).toEqual([]);
    const state = (await (await fetch(`${s.svc.localUrl}/api/state`)).json()) as { selection: string };
    expect(state.selection).toBe('machine');
  });

  it('READER ENABLE again mid-session: the machine is told (C,STOP), the unpaid order closes, nothing is charged', async () => {
    const s = (stack = await mdbStack({ vmc: { quirks: { reenableMidSession: true } } }));
    await enabled(s);
    s.pty.vmc.select('12', '2800');
    await s.waitFor(() => s.pty.vmc.denies.length === 1, { what: 'C,STOP to the machine still in its vend' });
    expect(s.pty.vmc.gaveUp).toEqual([]);
    await s.waitFor(() => s.orders().length === 1 && ['canceled', 'expired'].includes(s.orders()[0]!.state), {
      what: 'the order closed unpaid',
    });
    expect(s.refunds()).toEqual([]);
    expect(s.pty.vmc.dispensed).toEqual([]);
  });

  it('VEND SUCCESS after a deny (goods out unpaid) raises an alarm; a duplicate VEND SUCCESS of a paid vend does not', async () => {
    const s = (stack = await mdbStack({ vmc: { quirks: { vendAfterDeny: true, duplicateSuccess: true } } }));
    await enabled(s);
    s.pty.vmc.select('12', '2800');
    const order = await s.waitFor(() => s.orders().find((o) => o.state === 'awaiting_payment'), { what: 'the order' });
    await s.pay(order);
    await s.waitFor(() => s.orders()[0]?.state === 'vended', { what: 'the vend' });
    await s.waitFor(() => s.pty.vmc.said.filter((l) => l.startsWith('c,VEND,SUCCESS')).length === 2, { what: 'both success lines' });
    await s.waitFor(() => s.pty.vmc.state === 'enabled', { what: 'the machine back to enabled' });
    expect(s.alarms().filter((a) => a.name === 'mdb_goods_out_unpaid')).toEqual([]);
    s.pty.vmc.select('12', '200');
    await s.waitFor(() => s.pty.vmc.dispensed.length === 2, { what: 'the machine vending anyway after the deny' });
    const alarm = await s.waitFor(() => s.alarms().find((a) => a.name === 'mdb_goods_out_unpaid'), { what: 'the goods-out-unpaid alarm' });
    expect(alarm.message).toMatch(/without an approval after a deny/);
    expect(s.orders()).toHaveLength(1);
  });
});

describe('MDB amount scale', () => {
  it('a scale of 100 for MNT (every price ×100) is refused at start in one line', async () => {
    await expect(
      startService({
        config: {
          device: { currency: 'MNT' },
          actuator: { kind: 'serial', serial: { path: '/dev/null', profile: 'mdb', mdb: { scale: 100 } } },
        },
      }),
    ).rejects.toThrow(/actuator\.serial\.mdb\.scale: 100 disagrees with MNT .*2800 would be charged 280000/);
  });
});
