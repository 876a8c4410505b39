import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { testBroker } from '../helpers/broker.js';
import { watch, type Watcher } from '../mqtt/watch.js';
import { cleanup, closeWatcher, stop } from '../helpers/cleanup.js';
import { commandPayload } from '../helpers/operator.js';
import { waitFor } from '../helpers/wait.js';

describe('the service as operators see it over MQTT', () => {
  const defer = cleanup();
  let watcher: Watcher;
  let app: App;

  async function start() {
    const dir = defer(tempDir(), (d) => d.cleanup());
    const broker = defer(await testBroker(), (b) => b.close());
    const deviceId = `mw-${randomBytes(4).toString('hex')}`;
    const prefix = `vgtest${randomBytes(3).toString('hex')}`;
    watcher = defer(await watch(broker.url, [`${prefix}/${deviceId}/#`]), closeWatcher);
    const settings = testSettings(dir.path, { device: { id: deviceId }, mqtt: { url: broker.url, prefix, telemetryIntervalSec: 5 } });
    app = defer(createApp(settings, { logger: silentLogger() }), stop);
    const { localUrl } = await app.start();
    return { base: `${prefix}/${deviceId}`, deviceId, localUrl, ctx: app.context() };
  }

  it('publishes presence, state, and every event of a paid order in seq order', async () => {
    const { base, localUrl, ctx } = await start();
    await watcher.next(`${base}/status`, (m) => m.payload === 'online');
    const created = (await (
      await fetch(`${localUrl}/api/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"slot":"A1"}' })
    ).json()) as { invoiceId: string };
    await ctx.sandbox!.payments.pay(created.invoiceId);
    await watcher.until(() => watcher.on(`${base}/events`).some((m) => JSON.parse(m.payload).type === 'vend.succeeded'), {
      what: 'vend.succeeded',
    });
    const events = watcher.on(`${base}/events`).map((m) => JSON.parse(m.payload) as { type: string; seq: number; id: string });
    const types = [...new Set(events.map((e) => e.type))];
    expect(types).toEqual(
      expect.arrayContaining(['order.created', 'invoice.created', 'payment.observed', 'vend.queued', 'vend.started', 'vend.succeeded']),
    );
    expect(types.indexOf('order.created')).toBeLessThan(types.indexOf('vend.succeeded'));
    const seqs = events.map((e) => e.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(new Set(events.map((e) => e.id)).size).toBe(new Set(seqs).size);
    const state = await watcher.next(`${base}/state`, (m) => m.retain || m.payload.includes('vended'));
    expect(JSON.parse(state.payload)).toHaveProperty('phase');
  });

  it('an out_of_service command stops orders on the local API and answers with its request id', async () => {
    const { base, deviceId, localUrl } = await start();
    await watcher.next(`${base}/status`, (m) => m.payload === 'online');
    await watcher.publish(
      `${base}/cmd/out_of_service`,
      commandPayload(deviceId, 'out_of_service', { requestId: 'r-1', on: true, reason: 'cleaning' }),
    );
    const result = await watcher.next(`${base}/cmd/out_of_service/result`);
    expect(JSON.parse(result.payload)).toMatchObject({ requestId: 'r-1', ok: true });
    const refused = await fetch(`${localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"slot":"A1"}',
    });
    expect(refused.status).toBe(503);
    await watcher.publish(`${base}/cmd/out_of_service`, commandPayload(deviceId, 'out_of_service', { requestId: 'r-2', on: false }));
    await watcher.next(`${base}/cmd/out_of_service/result`, (m) => m.payload.includes('r-2'));
    await waitFor(async () => ((await fetch(`${localUrl}/api/state`).then((r) => r.json())) as { phase: string }).phase === 'idle', {
      what: 'idle again',
    });
  });

  it('a remote test vend is refused unless allowed in the settings, and nothing is actuated', async () => {
    const { base, deviceId } = await start();
    await watcher.next(`${base}/status`, (m) => m.payload === 'online');
    await watcher.publish(`${base}/cmd/test_vend`, commandPayload(deviceId, 'test_vend', { requestId: 't-1', slot: 'A1' }));
    const result = JSON.parse((await watcher.next(`${base}/cmd/test_vend/result`)).payload);
    expect(result).toMatchObject({ requestId: 't-1', ok: false, error: { code: 'VG_ERR_REMOTE_VEND_DISABLED' } });
  });
});
