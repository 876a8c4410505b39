import { afterEach, describe, expect, it } from 'vitest';
import { mdbStack, type MdbStack } from './harness.js';
import type { Quirks, VmcOptions } from '../../../fakes/mdb-vmc/model.js';

/**
 * The MDB contract, authorization first (the customer picks and pays on the kiosk, then vendgate
 * starts the machine's session with that credit), against the VMC model on a real pty and the real
 * service. Every case ends with at most one charge, at most one vend per payment, and a refund
 * exactly once when the goods did not go out.
 */
describe('MDB authorization first against a VMC model', () => {
  let stack: MdbStack | null = null;
  afterEach(async () => {
    await stack?.stop();
    stack = null;
  });

  async function start(vmc: Partial<VmcOptions> = {}, mdb: Record<string, unknown> = {}) {
    const s = (stack = await mdbStack({
      vmc: { style: 'authorization-first', ...vmc },
      mdb: { session: 'authorization-first', sessionTimeoutSec: 8, ...mdb },
    }));
    await s.waitFor(() => s.pty.vmc.state === 'enabled' && s.pty.vmc.said.includes('c,STATUS,ENABLED'), {
      what: 'the VMC to enable the reader',
    });
    return s;
  }

  /** The customer picks item `slot` on the kiosk and pays it. */
  async function buyOnKiosk(s: MdbStack, slot: string) {
    const res = await fetch(`${s.svc.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot }),
    });
    expect(res.status).toBe(201);
    const order = await s.waitFor(() => s.orders().find((o) => o.state === 'awaiting_payment'), { what: 'the order' });
    await s.pay(order);
    return order;
  }

  /** Paid on the kiosk, the machine opens its session and the customer asks there for `item` at `price`. */
  async function selectAfterPaying(s: MdbStack, item = '12', price = '2800') {
    await buyOnKiosk(s, '12');
    await s.waitFor(() => s.pty.vmc.state === 'session-idle', { what: 'the session' });
    s.pty.vmc.select(item, price);
  }

  const settled = (s: MdbStack, state: string) =>
    s.waitFor(() => s.orders()[0]?.state === state && s.orders()[0], { timeoutMs: 45_000, what: `the order ${state}` });

  it('the paid credit starts the session; the matching request is approved and the vend settles', async () => {
    const s = await start();
    await buyOnKiosk(s, '12');
    await s.waitFor(() => s.pty.vmc.state === 'session-idle', { what: 'the session with the credit' });
    expect(s.pty.vmc.received).toContain('C,START,2800');
    s.pty.vmc.select('12', '2800');
    await settled(s, 'vended');
    expect(s.pty.vmc.dispensed).toEqual([{ item: '12', approved: '12@2800' }]);
    expect(s.refunds()).toEqual([]);
  });

  it('a request for a different item is denied and the payment refunded once', async () => {
    const s = await start();
    await selectAfterPaying(s, '13', '3500');
    await settled(s, 'refunded');
    expect(s.pty.vmc.denies).toEqual([{ state: 'vend' }]);
    expect(s.pty.vmc.dispensed).toEqual([]);
    expect(s.refunds()).toEqual([expect.objectContaining({ amount: 2800 })]);
  });

  it('no selection within the time: the inactive session is stopped (not a deny) and the payment refunded once', async () => {
    const s = await start({}, { sessionTimeoutSec: 5 });
    await buyOnKiosk(s, '12');
    await settled(s, 'refunded');
    expect(s.pty.vmc.denies).toEqual([{ state: 'session-idle' }]);
    expect(s.refunds()).toHaveLength(1);
  });

  it("the machine's own vend requests are denied: no session was started for them", async () => {
    const s = await start({ style: 'always-idle' });
    s.pty.vmc.select('12', '2800');
    await s.waitFor(() => s.pty.vmc.denies.length === 1, { what: 'the deny' });
    expect(s.orders()).toEqual([]);
  });

  describe('quirks', () => {
    const cases: [string, Partial<Quirks>, 'vended' | 'refunded'][] = [
      ['a reset right after BEGIN SESSION', { resetAfterBeginSession: true }, 'refunded'],
      ['BEGIN SESSION ignored until repeated', { beginSessionIgnored: 2 }, 'vended'],
      ['READER ENABLE sent again mid-session', { reenableMidSession: true }, 'refunded'],
      ['a SETUP loop before the reader is enabled', { setupLoops: 3 }, 'vended'],
      ['VEND SUCCESS reported twice', { duplicateSuccess: true }, 'vended'],
    ];
    it.each(cases)('%s: at most one charge and one vend, a refund when nothing went out', async (_name, quirks, end) => {
      const s = await start({ quirks });
      await buyOnKiosk(s, '12');
      if (end === 'vended') {
        await s.waitFor(() => s.pty.vmc.state === 'session-idle', { what: 'the session' });
        s.pty.vmc.select('12', '2800');
      }
      await settled(s, end);
      expect(s.pty.vmc.dispensed.length).toBe(end === 'vended' ? 1 : 0);
      expect(s.refunds().length).toBe(end === 'vended' ? 0 : 1);
      expect(s.orders()).toHaveLength(1);
      expect(s.pty.vmc.received.filter((l) => l === 'C,1').length).toBeLessThanOrEqual(2);
    });

    it('SESSION CANCEL ignored while the machine keeps polling: refunded once; a late selection is denied, goods out unpaid raise an alarm', async () => {
      const s = await start({ quirks: { ignoreSessionCancel: true, vendAfterDeny: true } }, { sessionTimeoutSec: 5 });
      await buyOnKiosk(s, '12');
      await settled(s, 'refunded');
      expect(s.pty.vmc.state, s.pty.vmc.received.join(' | ') + ' // ' + s.pty.vmc.said.join(' | ')).toBe('session-idle');
      s.pty.vmc.select('12', '2800');
      await s.waitFor(() => s.pty.vmc.dispensed.length === 1, { what: 'the machine vending anyway' });
      await s.waitFor(() => s.alarms().find((a) => a.name === 'mdb_goods_out_unpaid'), { what: 'the goods-out-unpaid alarm' });
      expect(s.refunds()).toHaveLength(1);
    });

    it('VEND SUCCESS for another item: charged once, and an alarm names both items', async () => {
      const s = await start({ quirks: { successForItem: '13' } });
      await selectAfterPaying(s);
      await settled(s, 'vended');
      const alarm = await s.waitFor(() => s.alarms().find((a) => a.name.startsWith('mdb_other_item/')), { what: 'the alarm' });
      expect(alarm.message).toMatch(/item 13 out .* approved for item 12/);
      expect(s.refunds()).toEqual([]);
    });

    it('a power cycle of the machine mid-vend leaves the order for a person, never a blind refund, and the reader comes back with its settings', async () => {
      const s = await start({}, { setconf: ['C,SETCONF,mdb-always-idle=0'] });
      // The machine dies as it starts the vend: the approval goes out, no result comes back.
      await selectAfterPaying(s);
      await s.waitFor(() => s.pty.vmc.approvals.length === 1, { what: 'the approval' });
      s.pty.vmc.powerCycleMachine();
      expect(s.pty.vmc.dispensed).toEqual([]);
      await settled(s, 'vend_uncertain');
      expect(s.refunds()).toEqual([]);
      await s.waitFor(() => s.pty.vmc.state === 'enabled' && s.pty.vmc.settings.length === 1, {
        what: 'the reader back with its settings',
      });
    });

    it('a power cycle of the board mid-vend leaves the order for a person, never a blind refund or a second approval', async () => {
      const s = await start({}, { setconf: ['C,SETCONF,mdb-always-idle=0'] });
      await selectAfterPaying(s);
      await s.waitFor(() => s.pty.vmc.approvals.length === 1, { what: 'the approval' });
      // The board loses power as the motor starts: the result never reaches the Pi.
      s.pty.vmc.powerCycleBoard();
      await settled(s, 'vend_uncertain');
      expect(s.refunds()).toEqual([]);
      await s.waitFor(() => s.pty.vmc.state === 'enabled' && s.pty.vmc.settings.length === 1, {
        what: 'the reader back with its settings',
      });
      expect(s.pty.vmc.approvals).toHaveLength(1);
      expect(s.pty.vmc.received.filter((l) => l.startsWith('C,START'))).toHaveLength(1);
      expect(s.orders()).toHaveLength(1);
    });

    it("the board's power-on loses its settings: they are sent again and the next sale goes through", async () => {
      const s = await start({}, { setconf: ['C,SETCONF,mdb-always-idle=0'] });
      s.pty.vmc.powerCycleBoard();
      await s.waitFor(() => s.pty.vmc.state === 'enabled' && s.pty.vmc.settings.length === 1, {
        what: 'settings re-sent after the power-on',
      });
      await selectAfterPaying(s);
      await settled(s, 'vended');
    });
  });
});
