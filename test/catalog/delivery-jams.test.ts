import { describe, expect, it } from 'vitest';
import { cleanup, stop } from '../helpers/cleanup.js';
import { startService } from '../helpers/service.js';
import { cli, get, offered, order, orderReaches, pay, query } from './helpers.js';

/**
 * Vend-detect and jams, black-box: the compiled service as a child process with the sim actuator's
 * chute sensor, the sandbox provider paid through its pay URL, the CLI as its own process.
 */
describe('delivery you can prove: the drop sensor and jammed slots', () => {
  const defer = cleanup();

  it('a vend the sensor saw no drop for is refunded once, never vended, and stays so across a restart', async () => {
    const svc = defer(
      await startService({
        config: { actuator: { kind: 'sim', sim: { durationMs: 20, dropSensor: true, failMode: 'no_drop' }, deliveryWindowMs: 300 } },
      }),
      stop,
    );
    const created = await order(svc, 'A1');
    expect(created.status).toBe(201);
    await pay(created.body.payUrl);
    const refunded = await orderReaches(svc, created.body.orderId, 'refunded');
    expect(refunded.history.map((h: { reason: string }) => h.reason).join(' | ')).toMatch(/no drop at the delivery sensor within 300 ms/);
    expect(svc.readSimLog()).toEqual([]);
    await svc.kill('SIGKILL');
    await svc.restart();
    // After the restart: still refunded, exactly one refund, the vend job failed once and never fired again.
    expect((await get(`${svc.localUrl}/api/orders/${created.body.orderId}`)).state).toBe('refunded');
    expect(query(svc, 'SELECT count(*) AS n FROM refunds')[0].n).toBe(1);
    expect(query(svc, 'SELECT state, outcome FROM vend_jobs')).toEqual([{ state: 'failed', outcome: 'failed' }]);
    expect(svc.readSimLog()).toEqual([]);
  });

  it('in manual capture a missing drop releases the hold: voided, never captured', async () => {
    const svc = defer(
      await startService({
        config: {
          provider: { name: 'sandbox', captureMode: 'manual' },
          actuator: { kind: 'sim', sim: { durationMs: 20, dropSensor: true, failMode: 'no_drop' }, deliveryWindowMs: 300 },
        },
      }),
      stop,
    );
    const created = await order(svc, 'A1');
    await pay(created.body.payUrl);
    await orderReaches(svc, created.body.orderId, 'refunded');
    expect(query(svc, 'SELECT kind, state FROM refunds')).toEqual([{ kind: 'void', state: 'succeeded' }]);
    expect(query(svc, 'SELECT capture_state FROM vend_jobs')).toEqual([{ capture_state: null }]);
    expect(svc.readSimLog()).toEqual([]);
  });

  it('a drop within the window settles the vend as delivered', async () => {
    const svc = defer(
      await startService({ config: { actuator: { kind: 'sim', sim: { durationMs: 20, dropSensor: true }, deliveryWindowMs: 2_000 } } }),
      stop,
    );
    const created = await order(svc, 'A2');
    await pay(created.body.payUrl);
    const vended = await orderReaches(svc, created.body.orderId, 'vended');
    expect(vended.history.map((h: { reason: string }) => h.reason)).toContain('vend succeeded');
    expect(svc.readSimLog().map((line) => line.orderId)).toEqual([created.body.orderId]);
    expect(query(svc, 'SELECT count(*) AS n FROM refunds')[0].n).toBe(0);
  });

  it('K failed vends in a row take the slot out of sale with an alarm; clear-jam on the command line brings it back', async () => {
    const svc = defer(
      await startService({
        config: { actuator: { kind: 'sim', sim: { durationMs: 20, jamSlots: ['A2'] } }, slots: { jamAfterFailures: 2 } },
      }),
      stop,
    );
    for (let i = 0; i < 2; i++) {
      const created = await order(svc, 'A2');
      expect(created.status).toBe(201);
      await pay(created.body.payUrl);
      await orderReaches(svc, created.body.orderId, 'refunded');
    }
    const refused = await order(svc, 'A2');
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('VG_ERR_SLOT_JAMMED');
    expect(refused.body.error.message).toMatch(/slot A2 is out of order/);
    expect(await offered(svc, 'A2')).toMatchObject({ available: false, unavailable: 'jammed' });
    expect(query(svc, 'SELECT name FROM alarms').map((a) => a.name)).toContain('slot_jammed/A2');
    // The other slot still sells.
    const other = await order(svc, 'A1');
    expect(other.status).toBe(201);
    expect(svc.readSimLog()).toEqual([]);
    expect(query(svc, 'SELECT count(*) AS n FROM refunds')[0].n).toBe(2);

    const stock = await cli(svc, ['stock']);
    expect(stock.stdout).toMatch(/A2 .*JAMMED/);
    // The technician's selftest names the jammed slot and the command that clears it.
    const selftest = JSON.parse((await cli(svc, ['selftest', '--json'])).stdout);
    expect(selftest.checks.find((c: { name: string }) => c.name === 'slots.jammed')).toMatchObject({
      status: 'WARN',
      detail: expect.stringMatching(/A2 \(2 failures, last: simulated motor jam in slot A2\)/),
      hint: expect.stringMatching(/vendgate clear-jam A2/),
    });
    const cleared = await cli(svc, ['clear-jam', 'A2']);
    expect(cleared).toMatchObject({ code: 0 });
    expect(cleared.stdout).toMatch(/back in sale/);
    expect(query(svc, 'SELECT name FROM alarms').map((a) => a.name)).not.toContain('slot_jammed/A2');
    await svc.waitFor(async () => (await offered(svc, 'A2')).available, { timeoutMs: 5_000, what: 'A2 offered again' });
    const again = await order(svc, 'A2');
    expect(again.status).toBe(201);
  });
});
