import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../src/simulator/index.js';
import { freePort, postJson, startService, type Service } from '../helpers/service.js';
import { startOutageProxy, type OutageProxy } from '../helpers/outage-proxy.js';
import { startHttpProxy, type HttpProxy } from '../helpers/http-proxy.js';
import { startProviderStack, type ProviderStack } from '../techniques/chaos/stack.js';
import { waitFor } from '../helpers/wait.js';

/**
 * An outage of the payment provider is a state of the real service, not a crash: started with the
 * provider unreachable, or cut off once an Events API catch-up is due, it stays up (every retry
 * catches its own failure), says so on /healthz, refuses orders it cannot charge with a clear code,
 * and sells again by itself once the provider answers.
 */
const backfillFailures = (svc: Service) => svc.logs().filter((line) => line.msg === 'backfill failed; will retry');

/** Waits for `what`, but fails at once, with its stderr, if the service exits meanwhile. */
type Maybe<T> = T | null | false | undefined;
async function aliveUntil<T>(svc: Service, predicate: () => Maybe<T> | Promise<Maybe<T>>, what: string, timeoutMs = 45_000): Promise<T> {
  const exited = svc.exited().then((exit) => {
    throw new Error(`the service exited (${JSON.stringify(exit)}) while waiting for ${what}:\n${svc.stderr()}`);
  });
  return Promise.race([waitFor(predicate, { timeoutMs, what }), exited]);
}

describe('the provider unreachable', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('at start: the service starts and stays up through the catch-up retries, /healthz says degraded, orders are refused clearly, and it sells once the provider is back', async () => {
    const webhookPort = await freePort();
    const sim: Simulator = createSimulator({ provider: 'gerege', seed: 3, webhookUrl: `http://127.0.0.1:${webhookPort}/webhooks/gerege` });
    const { port: simPort } = await sim.start();
    cleanup.push(() => sim.stop());
    const proxy: OutageProxy = await startOutageProxy({ port: simPort });
    cleanup.push(() => proxy.stop());
    await proxy.cut();
    const info = sim.info();
    const svc = await startService({
      webhookPort,
      config: {
        device: { id: 'outage-start' },
        provider: { name: 'gerege', baseUrl: proxy.url, clientId: info.clientId, requestTimeoutMs: 1_000, createDeadlineMs: 3_000 },
        poll: { intervalMs: 200, maxBackoffMs: 2_000 },
      },
      env: { VENDGATE_PROVIDER_CLIENT_SECRET: info.clientSecret!, VENDGATE_WEBHOOK_SECRETS: info.webhookSecret },
    });
    cleanup.push(() => svc.stop());

    // The start-up catch-up fails, and so do its retries (5 s, then 10 s later): each one is caught.
    await aliveUntil(svc, () => backfillFailures(svc).length >= 3, 'three failed catch-ups');
    expect(backfillFailures(svc).map((line) => line.reason)).toEqual(
      expect.arrayContaining(['start-up', 'retry: start-up', 'retry: retry: start-up']),
    );
    expect(svc.stderr()).not.toContain('unhandled rejection');

    const health = await fetch(`${svc.localUrl}/healthz`);
    const healthBody = (await health.json()) as { ok: boolean; checks: Record<string, { ok: boolean; detail: string }> };
    expect(health.status).toBe(503);
    expect(healthBody.ok).toBe(false);
    expect(healthBody.checks.provider).toMatchObject({ ok: false });
    expect(healthBody.checks.provider!.detail).toMatch(/ECONNREFUSED|network error/);

    // Nothing is sold that cannot be charged: a clear code, and no order left waiting for a payment.
    const refused = await postJson(`${svc.localUrl}/api/orders`, { slot: 'A1' });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('VG_ERR_PROVIDER_UNAVAILABLE');

    // The provider comes back: the service notices by itself and sells.
    await proxy.restore();
    const created = await aliveUntil(
      svc,
      async () => {
        const answer = await postJson(`${svc.localUrl}/api/orders`, { slot: 'A1' });
        return answer.status === 201 ? ((await answer.json()) as { orderId: number; invoiceId: string }) : null;
      },
      'an order once the provider is back',
    );
    await sim.pay(created.invoiceId);
    await aliveUntil(svc, () => svc.readSimLog().some((line) => line.orderId === created.orderId), 'the vend');
    expect((await fetch(`${svc.localUrl}/healthz`)).status).toBe(200);
    expect(svc.stderr()).not.toContain('unhandled rejection');
  });

  it('mid-run, once a catch-up is due (a payment polled without its webhook): the catch-up and its retries fail, the service stays up, refuses orders, and sells again after', async () => {
    const proxy: HttpProxy = await startHttpProxy();
    cleanup.push(() => proxy.stop());
    const stack: ProviderStack = await startProviderStack({
      provider: 'gerege',
      httpProxy: proxy,
      config: { device: { id: 'outage-midrun' } },
    });
    cleanup.push(() => stack.stop());
    const svc = stack.svc;

    // The webhook never comes, so the poller finds the payment first and a catch-up falls due.
    stack.sim.setFaults({ dropWebhook: 1 });
    proxy.refuse(/^\/events/);
    const created = await stack.call('POST', '/api/orders', { slot: 'A1' });
    expect(created.status).toBe(201);
    await stack.sim.pay(created.json.invoiceId as string);
    expect((await stack.waitSettled(created.json.orderId as number)).state).toBe('vended');
    // Then the whole provider goes away.
    proxy.refuse(/./);

    const before = backfillFailures(svc).length;
    await aliveUntil(svc, () => backfillFailures(svc).length >= before + 3, 'three failed catch-ups in the outage');
    expect(backfillFailures(svc).some((line) => String(line.reason).startsWith('retry: retry: '))).toBe(true);

    const refused = await aliveUntil(
      svc,
      async () => {
        const answer = await stack.call('POST', '/api/orders', { slot: 'A2' });
        return answer.status !== 201 ? answer : null;
      },
      'an order refused in the outage',
    );
    expect(refused.status).toBe(503);
    expect(refused.json.error.code).toBe('VG_ERR_PROVIDER_UNAVAILABLE');

    proxy.refuse(null);
    await aliveUntil(
      svc,
      () => svc.logs().some((line) => line.msg === 'backfill done' && String(line.reason).startsWith('retry')),
      'a catch-up after the outage',
    );
    const next = await aliveUntil(
      svc,
      async () => {
        const answer = await stack.call('POST', '/api/orders', { slot: 'A2' });
        return answer.status === 201 ? answer : null;
      },
      'an order after the outage',
    );
    await stack.sim.pay(next.json.invoiceId as string);
    expect((await stack.waitSettled(next.json.orderId as number)).state).toBe('vended');
    expect(svc.stderr()).not.toContain('unhandled rejection');
  });
});
