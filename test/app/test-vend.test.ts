import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import type { Actuator, VendOutcome, VendRequest } from '../../src/hardware/index.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { testBroker } from '../helpers/broker.js';
import { watch, type Watcher } from '../mqtt/watch.js';
import { cleanup, closeWatcher, stop } from '../helpers/cleanup.js';
import { commandPayload } from '../helpers/operator.js';
import { waitFor } from '../helpers/wait.js';

/** An actuator whose every actuation waits until the test lets it answer; it counts overlaps. */
function heldActuator() {
  const waiting: (() => void)[] = [];
  const actuator = {
    kind: 'sim' as const,
    fired: [] as VendRequest[],
    active: 0,
    mostAtOnce: 0,
    waiting,
    async start() {},
    async fire(request: VendRequest): Promise<VendOutcome> {
      actuator.fired.push(request);
      actuator.active += 1;
      actuator.mostAtOnce = Math.max(actuator.mostAtOnce, actuator.active);
      await new Promise<void>((resolve) => waiting.push(resolve));
      actuator.active -= 1;
      return { result: 'vended' };
    },
    health: () => ({ ok: true, detail: 'held' }),
    async stop() {},
  } satisfies Actuator & Record<string, unknown>;
  return actuator;
}

describe('a remote test vend goes through the vend runner', () => {
  const defer = cleanup();
  let watcher: Watcher;
  let app: App;

  async function start(actuator: Actuator) {
    const dir = defer(tempDir(), (d) => d.cleanup());
    const broker = defer(await testBroker(), (b) => b.close());
    const deviceId = `tv-${randomBytes(4).toString('hex')}`;
    const prefix = `vgtest${randomBytes(3).toString('hex')}`;
    watcher = defer(await watch(broker.url, [`${prefix}/${deviceId}/#`]), closeWatcher);
    const settings = testSettings(dir.path, { device: { id: deviceId }, mqtt: { url: broker.url, prefix, allowRemoteVend: true } });
    app = defer(createApp(settings, { logger: silentLogger(), actuator }), stop);
    const { localUrl } = await app.start();
    const base = `${prefix}/${deviceId}`;
    await watcher.next(`${base}/status`, (m) => m.payload === 'online');
    const testVend = async (requestId: string, slot: string) => {
      await watcher.publish(`${base}/cmd/test_vend`, commandPayload(deviceId, 'test_vend', { requestId, slot }));
      const reply = await watcher.next(`${base}/cmd/test_vend/result`, (m) => m.payload.includes(requestId));
      return JSON.parse(reply.payload) as { ok: boolean; result?: unknown; error?: { code: string } };
    };
    return { ctx: app.context(), localUrl, testVend };
  }

  const order = async (localUrl: string) =>
    (await (
      await fetch(`${localUrl}/api/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"slot":"A1"}' })
    ).json()) as { orderId: number; invoiceId: string };

  it('fires the slot once with no order and no money, and answers with the outcome', async () => {
    const actuator = heldActuator();
    const { ctx, testVend } = await start(actuator);
    const answer = testVend('t-1', 'A1');
    await waitFor(() => actuator.waiting.length === 1, { what: 'the test actuation' });
    actuator.waiting.shift()!();
    expect(await answer).toMatchObject({ ok: true, result: { result: 'vended' } });
    expect(actuator.fired).toEqual([expect.objectContaining({ orderId: 0, reference: 'test-vend', slot: 'A1' })]);
    expect(ctx.orders.latest()).toBeUndefined();
  });

  it('is refused while an order is in progress, and nothing is actuated', async () => {
    const actuator = heldActuator();
    const { localUrl, testVend } = await start(actuator);
    await order(localUrl);
    expect(await testVend('t-2', 'A1')).toMatchObject({ ok: false, error: { code: 'VG_ERR_DEVICE_BUSY' } });
    expect(actuator.fired).toEqual([]);
  });

  it('a paid vend waits for a test actuation in progress: the machine is never driven twice at once', async () => {
    const actuator = heldActuator();
    const { ctx, localUrl, testVend } = await start(actuator);
    const answer = testVend('t-3', 'A1');
    await waitFor(() => actuator.waiting.length === 1, { what: 'the test actuation' });
    const created = await order(localUrl);
    await ctx.sandbox!.payments.pay(created.invoiceId);
    await waitFor(() => ctx.orders.get(created.orderId)!.state === 'paid', { what: 'paid, vend queued' });
    // A second test vend meanwhile is refused: a vend is queued.
    expect(await testVend('t-4', 'A1')).toMatchObject({ ok: false, error: { code: 'VG_ERR_DEVICE_BUSY' } });
    expect(actuator.fired).toHaveLength(1);
    actuator.waiting.shift()!();
    expect(await answer).toMatchObject({ ok: true });
    await waitFor(() => actuator.waiting.length === 1, { what: 'the paid vend' });
    actuator.waiting.shift()!();
    await waitFor(() => ctx.orders.get(created.orderId)!.state === 'vended', { what: 'vended' });
    expect(actuator.fired.map((r) => r.orderId)).toEqual([0, created.orderId]);
    expect(actuator.mostAtOnce).toBe(1);
  });
});
