import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { corePerTest, moneyPathDeps, type Core } from '../helpers/core.js';
import { createVendRunner, createRefundWorker, createSettlement } from '../../src/vend/index.js';
import { createSimActuator } from '../../src/hardware/sim.js';
import { ProviderError } from '../../src/payments/types.js';
import type { Actuator, VendOutcome } from '../../src/hardware/index.js';

function setup(core: Core, actuator: Actuator, overrides: { vendTimeoutMs?: number; notPassed?: 'refund' | 'keep' } = {}) {
  const vend = createVendRunner(
    { ...moneyPathDeps(core), actuator },
    { mode: 'vending', vendTimeoutMs: overrides.vendTimeoutMs ?? 2_000, notPassedPolicy: overrides.notPassed ?? 'refund' },
  );
  const refunds = createRefundWorker(moneyPathDeps(core), { checkIntervalMs: 1_000, unknownAlarmMs: 60_000 });
  return { vend, refunds };
}

async function paidOrder(core: Core, slot = 'A1') {
  const order = await core.orders.create({ source: 'kiosk', slot });
  core.fake.set(order.invoice_id!, 'paid');
  await core.observe(order.invoice_id!);
  return order;
}

function scripted(outcome: () => Promise<VendOutcome> | VendOutcome): Actuator & { fired: number } {
  const actuator = {
    kind: 'sim' as const,
    fired: 0,
    async start() {},
    async fire() {
      actuator.fired++;
      return outcome();
    },
    health: () => ({ ok: true, detail: 'scripted' }),
    async stop() {},
  };
  return actuator;
}

describe('vend runner', () => {
  let core: Core;
  corePerTest((c) => (core = c));

  it('commits the claim to disk before the actuator is touched', async () => {
    let seen: unknown;
    const actuator = scripted(() => {
      const other = new Database(core.settings.storage.path, { readonly: true });
      seen = other.prepare('SELECT j.state AS job, o.state AS orderState FROM vend_jobs j JOIN orders o ON o.id = j.order_id').get();
      other.close();
      return { result: 'vended' };
    });
    const { vend } = setup(core, actuator);
    const order = await paidOrder(core);
    await vend.run();
    expect(seen).toEqual({ job: 'firing', orderState: 'vending' });
    expect(core.orders.get(order.id)!.state).toBe('vended');
  });

  it('fires once per order however often it is asked to run', async () => {
    const sim = createSimActuator({ clock: core.clock }, { logPath: `${core.dir.path}/sim.jsonl`, durationMs: 0, failMode: 'none' });
    await sim.start();
    const { vend } = setup(core, sim);
    const order = await paidOrder(core);
    await Promise.all([vend.run(), vend.run(), vend.run()]);
    await vend.run();
    await core.observe(order.invoice_id!, 'webhook');
    await vend.run();
    const lines = readFileSync(`${core.dir.path}/sim.jsonl`, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ orderId: order.id, slot: 'A1' });
  });

  it.each([
    ['fails', () => ({ result: 'failed', reason: 'motor jam' }) as VendOutcome],
    ['nobody passes', () => ({ result: 'not_passed' }) as VendOutcome],
  ])('a vend that %s is refunded exactly once', async (_name, outcome) => {
    const actuator = scripted(outcome);
    const { vend, refunds } = setup(core, actuator, { vendTimeoutMs: 50 });
    const order = await paidOrder(core);
    await vend.run();
    expect(core.orders.get(order.id)!.state).toBe('refunding');
    await refunds.run();
    await refunds.run();
    expect(core.orders.get(order.id)!.state).toBe('refunded');
    expect(core.fake.callsOf('refund')).toEqual([
      { method: 'refund', arg: { invoiceId: order.invoice_id, amount: 1500, idempotencyKey: `${order.reference}-refund` } },
    ]);
    expect(actuator.fired).toBe(1);
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('EIO');
      },
    ],
    ['hangs past its timeout', () => new Promise<VendOutcome>(() => {})],
    ['sent the command but got no answer', () => ({ result: 'unknown', detail: 'no answer' }) as VendOutcome],
  ])('a vend whose actuator %s is parked as uncertain for a person: no refund, no second fire', async (_name, outcome) => {
    const actuator = scripted(outcome);
    const { vend, refunds } = setup(core, actuator, { vendTimeoutMs: 50 });
    const order = await paidOrder(core);
    await vend.run();
    await vend.run();
    await refunds.run();
    expect(core.orders.get(order.id)!.state).toBe('vend_uncertain');
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual([`vend_uncertain/${order.id}`]);
    expect(core.fake.callsOf('refund')).toEqual([]);
    expect(actuator.fired).toBe(1);
  });

  it('turnstile policy keep leaves the fare with the operator when nobody passed', async () => {
    const actuator = scripted(() => ({ result: 'not_passed' }));
    const { vend } = setup(core, actuator, { notPassed: 'keep' });
    const order = await paidOrder(core);
    await vend.run();
    expect(core.orders.get(order.id)!.state).toBe('vended');
    expect(core.count('SELECT count(*) AS n FROM refunds')).toBe(0);
  });

  it('a job left firing by a crash becomes uncertain with an alarm and is never fired again', async () => {
    const actuator = scripted(() => ({ result: 'vended' }));
    const order = await paidOrder(core);
    // The crash: the claim was committed, then the process died.
    core.db.prepare("UPDATE vend_jobs SET state = 'firing' WHERE order_id = ?").run(order.id);
    core.db.prepare("UPDATE orders SET state = 'vending' WHERE id = ?").run(order.id);
    const { vend } = setup(core, actuator);
    const recovered = await vend.recover();
    await vend.run();
    expect(recovered.uncertain).toEqual([order.id]);
    expect(actuator.fired).toBe(0);
    expect(core.orders.get(order.id)!.state).toBe('vend_uncertain');
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual([`vend_uncertain/${order.id}`]);
  });

  it('after a crash the machine settles an uncertain vend when it can tell', async () => {
    const actuator = { ...scripted(() => ({ result: 'vended' })), queryOutcome: async () => 'not_vended' as const };
    const order = await paidOrder(core);
    core.db.prepare("UPDATE vend_jobs SET state = 'firing' WHERE order_id = ?").run(order.id);
    core.db.prepare("UPDATE orders SET state = 'vending' WHERE id = ?").run(order.id);
    const { vend } = setup(core, actuator);
    const recovered = await vend.recover();
    expect(recovered.settled).toEqual([order.id]);
    expect(core.orders.get(order.id)!.state).toBe('refunding');
    expect(core.outbox.openAlarms()).toEqual([]);
  });

  it('a person resolves an uncertain vend: not vended refunds and clears the alarm; resolving twice is refused', async () => {
    const order = await paidOrder(core);
    core.db.prepare("UPDATE vend_jobs SET state = 'firing' WHERE order_id = ?").run(order.id);
    core.db.prepare("UPDATE orders SET state = 'vending' WHERE id = ?").run(order.id);
    const { vend } = setup(
      core,
      scripted(() => ({ result: 'vended' })),
    );
    await vend.recover();
    const settlement = createSettlement({ db: core.db, clock: core.clock, outbox: core.outbox, orderRepository: core.orderRepository });
    expect(settlement.resolve(order.id, false, 'test').state).toBe('refunding');
    expect(core.outbox.openAlarms()).toEqual([]);
    expect(() => settlement.resolve(order.id, true, 'test')).toThrow(/only vend_uncertain/);
    expect(core.count('SELECT count(*) AS n FROM refunds')).toBe(1);
  });
});

describe('refund worker', () => {
  let core: Core;
  corePerTest((c) => (core = c));

  async function failedVend(refundResult: () => { status: 'unknown' | 'pending' | 'failed' | 'succeeded' }) {
    core.fake.hooks.refund = refundResult;
    const { vend, refunds } = setup(
      core,
      scripted(() => ({ result: 'failed', reason: 'jam' })),
    );
    const order = await paidOrder(core);
    await vend.run();
    await refunds.run();
    return { order, refunds };
  }

  it('never sends a refund twice when its outcome is unknown; reading the invoice settles it', async () => {
    const { order, refunds } = await failedVend(() => ({ status: 'unknown' }));
    expect(core.db.prepare('SELECT state FROM refunds').get()).toEqual({ state: 'unknown' });
    core.clock.advance(1_000);
    await refunds.run();
    expect(core.fake.callsOf('refund')).toHaveLength(1);
    // The money did move: the provider now shows the invoice refunded.
    core.fake.set(order.invoice_id!, 'refunded');
    core.clock.advance(1_000);
    await refunds.run();
    expect(core.fake.callsOf('refund')).toHaveLength(1);
    expect(core.orders.get(order.id)!.state).toBe('refunded');
  });

  it('asks again with the same key where the provider makes that safe, and completes on its answer', async () => {
    let moved = 0;
    core.fake.hooks.confirmRefund = () => ({ status: 'succeeded', refundId: 're_1' });
    const { order, refunds } = await failedVend(() => {
      moved++;
      return { status: 'unknown' };
    });
    core.clock.advance(1_000);
    await refunds.run();
    expect(core.orders.get(order.id)!.state).toBe('refunded');
    const keys = core.fake.calls
      .filter((c) => c.method === 'refund' || c.method === 'confirmRefund')
      .map((c) => [c.method, (c.arg as { idempotencyKey: string }).idempotencyKey]);
    expect(keys).toEqual([
      ['refund', `${order.reference}-refund`],
      ['confirmRefund', `${order.reference}-refund`],
    ]);
    expect(moved).toBe(1);
  });

  it('raises an alarm when a refund stays unknown too long', async () => {
    const { order, refunds } = await failedVend(() => ({ status: 'unknown' }));
    core.clock.advance(61_000);
    await refunds.run();
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual([`refund_unknown/${order.id}`]);
    expect(core.fake.callsOf('refund')).toHaveLength(1);
  });

  const DAY = 86_400_000;

  it('a wall clock set back 30 days does not stop the checks of a refund whose outcome is unknown', async () => {
    const { order, refunds } = await failedVend(() => ({ status: 'unknown' }));
    // NTP corrects a Pi that booted with a time in the future: the next check's time, written by
    // the old clock, now lies 30 days ahead.
    core.clock.set(core.clock.now() - 30 * DAY);
    core.fake.set(order.invoice_id!, 'refunded');
    await refunds.run();
    expect(core.orders.get(order.id)!.state).toBe('refunded');
    expect(core.fake.callsOf('refund')).toHaveLength(1);
  });

  it('with the wall clock set back 30 days, a refund unknown for longer than the alarm time by its checks still raises the alarm', async () => {
    const { order, refunds } = await failedVend(() => ({ status: 'unknown' }));
    core.clock.set(core.clock.now() - 30 * DAY);
    for (let check = 0; check < 61; check++) {
      core.clock.advance(1_000);
      await refunds.run();
    }
    expect(core.outbox.openAlarms().map((a) => a.name)).toEqual([`refund_unknown/${order.id}`]);
    expect(core.fake.callsOf('refund')).toHaveLength(1);
  });

  it('a refund interrupted by a crash while sending is read, not resent', async () => {
    const { refunds } = await failedVend(() => ({ status: 'succeeded' }));
    core.db.prepare("UPDATE refunds SET state = 'sending'").run();
    expect(refunds.recover()).toBe(1);
    await refunds.run();
    expect(core.fake.callsOf('refund')).toHaveLength(1);
  });
});

describe('manual capture', () => {
  let core: Core;
  corePerTest((c) => (core = c), { provider: { captureMode: 'manual' } });

  it('a wall clock set back 30 days after a failed capture does not hold the next attempt back for 30 days', async () => {
    const { vend } = setup(
      core,
      scripted(() => ({ result: 'vended' })),
    );
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    core.fake.set(order.invoice_id!, 'authorized');
    await core.observe(order.invoice_id!);
    await vend.run();
    expect(core.orders.get(order.id)!.state).toBe('vended');
    let down = true;
    core.fake.hooks.captureError = () => (down ? new ProviderError('network', 'connection refused') : undefined);
    await vend.capturePending();
    const captureState = () =>
      (core.db.prepare('SELECT capture_state FROM vend_jobs WHERE order_id = ?').get(order.id) as { capture_state: string }).capture_state;
    expect(captureState()).toBe('pending');

    down = false;
    core.clock.set(core.clock.now() - 30 * 86_400_000);
    await vend.capturePending();
    expect(captureState()).toBe('done');
    expect(core.fake.callsOf('captureInvoice')).toHaveLength(2);
  });
});
