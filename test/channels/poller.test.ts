import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCore, reportingCalls, type Core } from '../helpers/core.js';
import { createPoller, type Poller } from '../../src/channels/poller.js';
import { ProviderError } from '../../src/payments/types.js';

import { systemClock } from '../../src/util/clock.js';
import { waitFor } from '../helpers/wait.js';

describe('poller', () => {
  let core: Core;
  let poller: Poller;
  beforeEach(() => {
    core = buildCore();
  });
  afterEach(async () => {
    await poller?.stop();
    core.close();
  });

  // The poller runs on real timers and the wall clock; the core's manual clock only stamps rows.
  function start(intervalMs = 40) {
    poller = createPoller(
      {
        db: core.db,
        clock: systemClock,
        logger: core.logger,
        // As app.ts builds it: provider health hears each call's outcome (the HTTP client's onCall).
        provider: reportingCalls(core.fake.provider, (outcome) => core.health.heard(outcome)),
        ledger: core.ledger,
        health: core.health,
        orderRepository: core.orderRepository,
      },
      { intervalMs, maxBackoffMs: 2_000 },
    );
    poller.start();
  }
  const gets = () => core.fake.callsOf('getInvoice').length;

  it('makes no provider calls while no invoice is open', async () => {
    start();
    const idle = Date.now();
    await waitFor(() => Date.now() - idle > 300);
    expect(core.fake.calls).toEqual([]);
  });

  it('an idle poller woken by a new order reads its invoice at once, not after a whole interval', async () => {
    start(60_000);
    // Let the first tick find nothing open: the poller then sleeps a whole interval (an idle device stays idle).
    const idle = Date.now();
    await waitFor(() => Date.now() - idle > 600);
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    poller.wake();
    await waitFor(() => core.fake.callsOf('getInvoice').some((c) => c.arg === order.invoice_id), { what: 'the first read' });
  });

  it('reads an open invoice until it is paid, feeds the ledger, then stops', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    start();
    await waitFor(() => gets() >= 2, { what: 'two polls' });
    core.fake.set(order.invoice_id!, 'paid');
    await waitFor(() => core.orders.get(order.id)!.state === 'paid', { what: 'paid' });
    const after = gets();
    const settled = Date.now();
    await waitFor(() => Date.now() - settled > 300);
    expect(gets()).toBe(after);
    expect(core.count("SELECT count(*) AS n FROM invoice_status_ledger WHERE status = 'paid' AND channel = 'poll'")).toBe(1);
  });

  it('waits at least Retry-After after a 429', async () => {
    const order = await core.orders.create({ source: 'kiosk', slot: 'A1' });
    let limited = true;
    const times: number[] = [];
    core.fake.hooks.getError = () => {
      times.push(Date.now());
      return limited ? new ProviderError('rate_limited', 'slow down', { httpStatus: 429, retryAfterMs: 400 }) : undefined;
    };
    start(20);
    await waitFor(() => times.length >= 2, { what: 'a retry' });
    limited = false;
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(390);
    core.fake.set(order.invoice_id!, 'paid');
    await waitFor(() => core.orders.get(order.id)!.state === 'paid');
  });

  it('backs off when the provider keeps failing and marks it unreachable', async () => {
    await core.orders.create({ source: 'kiosk', slot: 'A1' });
    const times: number[] = [];
    core.fake.hooks.getError = () => {
      times.push(Date.now());
      return new ProviderError('server', '503', { httpStatus: 503 });
    };
    start(20);
    await waitFor(() => times.length >= 4, { what: 'four failures', timeoutMs: 30_000 });
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps[2]!).toBeGreaterThan(gaps[0]!);
    expect(core.health.reachable).toBe(false);
  });
});
