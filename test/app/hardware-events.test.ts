import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import type { Actuator, HardwareEvent, HardwareInputs, VendOutcome } from '../../src/hardware/index.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

/** Inputs a test can drive: what the machine would tell us. */
function scriptedInputs(): HardwareInputs & { emit(event: HardwareEvent): void } {
  const listeners: ((event: HardwareEvent) => void)[] = [];
  return {
    async start() {},
    on(listener) {
      listeners.push(listener);
    },
    read() {
      return {};
    },
    async stop() {},
    emit(event) {
      for (const l of listeners) l(event);
    },
  };
}

function recordingActuator(): Actuator & { denied: string[]; fired: number[] } {
  const actuator = {
    kind: 'serial' as const,
    denied: [] as string[],
    fired: [] as number[],
    async start() {},
    async fire(request: { orderId: number }): Promise<VendOutcome> {
      actuator.fired.push(request.orderId);
      return { result: 'vended' };
    },
    async denySession(reason: string) {
      actuator.denied.push(reason);
    },
    health: () => ({ ok: true, detail: 'recording' }),
    async stop() {},
  };
  return actuator;
}

/** A customer's order for A1 on the local API, as the kiosk posts it: the status of the answer. */
async function orderStatus(localUrl: string): Promise<number> {
  const res = await fetch(`${localUrl}/api/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"slot":"A1"}',
  });
  return res.status;
}

describe('what the machine tells us becomes orders and service state', () => {
  let app: App | null = null;
  let dir: ReturnType<typeof tempDir>;
  afterEach(async () => {
    await app?.stop();
    dir?.cleanup();
  });

  async function start(overrides: Parameters<typeof testSettings>[1] = {}) {
    dir = tempDir();
    const inputs = scriptedInputs();
    const actuator = recordingActuator();
    app = createApp(testSettings(dir.path, overrides), { logger: silentLogger(), inputs, actuator });
    const { localUrl } = await app.start();
    return { inputs, actuator, localUrl, ctx: app.context() };
  }

  it('an MDB vend request creates an order for that item and amount; paying it approves the vend', async () => {
    const { inputs, actuator, ctx } = await start();
    inputs.emit({ type: 'vend_request', item: 'A2', amount: 2500 });
    const order = await waitFor(() => ctx.orders.latest()?.state === 'awaiting_payment' && ctx.orders.latest());
    expect(order).toMatchObject({ source: 'mdb', slot: 'A2', amount: 2500, item_name: 'Cola' });
    await ctx.sandbox!.payments.pay(order.invoice_id!);
    await waitFor(() => ctx.orders.get(order.id)!.state === 'vended', { what: 'vended' });
    expect(actuator.fired).toEqual([order.id]);
  });

  it('an MDB vend request with a zero amount is denied and never becomes an invoice', async () => {
    const { inputs, actuator, ctx } = await start();
    inputs.emit({ type: 'vend_request', item: 'A2', amount: 0 });
    await waitFor(() => actuator.denied.length === 1, { what: 'the session denied' });
    expect(ctx.orders.latest()).toBeUndefined();
  });

  it('an expired MDB order denies the machine session', async () => {
    const { inputs, actuator, ctx } = await start();
    inputs.emit({ type: 'vend_request', item: 'A1', amount: 1500 });
    const order = await waitFor(() => ctx.orders.latest()?.state === 'awaiting_payment' && ctx.orders.latest());
    inputs.emit({ type: 'session_cancel' });
    await waitFor(() => ctx.orders.get(order.id)!.state === 'canceled', { what: 'canceled' });
    await waitFor(() => actuator.denied.length === 1, { what: 'the session denied' });
  });

  it('inhibit puts the machine out of service (503) until it is released', async () => {
    const { inputs, localUrl } = await start();
    inputs.emit({ type: 'inhibit', active: true });
    expect(await orderStatus(localUrl)).toBe(503);
    expect(((await (await fetch(`${localUrl}/api/state`)).json()) as { phase: string }).phase).toBe('out_of_service');
    inputs.emit({ type: 'inhibit', active: false });
    expect(await orderStatus(localUrl)).toBe(201);
  });

  it('a fire alarm stops orders and raises an alarm that clears when it ends', async () => {
    const { inputs, ctx } = await start();
    inputs.emit({ type: 'fire_alarm', active: true });
    expect(ctx.outbox.openAlarms().map((a) => a.name)).toEqual(['fire_alarm']);
    await expect(ctx.orders.create({ source: 'kiosk', slot: 'A1' })).rejects.toMatchObject({ code: 'VG_ERR_OUT_OF_SERVICE' });
    inputs.emit({ type: 'fire_alarm', active: false });
    expect(ctx.outbox.openAlarms()).toEqual([]);
  });

  it('the button of a turnstile starts an order for the fare', async () => {
    const { inputs, ctx } = await start({ device: { mode: 'turnstile', fare: 500, catalog: [] } });
    inputs.emit({ type: 'button' });
    const order = await waitFor(() => ctx.orders.latest()?.state === 'awaiting_payment' && ctx.orders.latest());
    expect(order).toMatchObject({ source: 'button', slot: null, amount: 500 });
  });
});
