import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { waitFor } from '../helpers/wait.js';
import { appsPerTest } from '../helpers/app.js';

/**
 * The local API's statuses through the real composition (order service, catalog, request guard,
 * error handler): each code answers with the one status util/errors.ts gives it.
 */
describe('the local API answers each error code with its one status', () => {
  const newApp = appsPerTest();

  async function start() {
    const app = newApp((dir) => createApp(testSettings(dir), { logger: silentLogger() }));
    const { localUrl } = await app.start();
    return { localUrl, ctx: app.context() };
  }

  async function call(url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const res = await fetch(url, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
    });
    return { status: res.status, body: (await res.json()) as { error?: { code: string; message: string } } & Record<string, unknown> };
  }

  it('an unknown slot is 400, an unknown order 404, a foreign page 403, a wrong media type 415', async () => {
    const { localUrl } = await start();
    const unknownSlot = await call(`${localUrl}/api/orders`, { body: { slot: 'Z9' } });
    expect(unknownSlot).toMatchObject({ status: 400, body: { error: { code: 'VG_ERR_UNKNOWN_SLOT' } } });
    expect(await call(`${localUrl}/api/orders/999`)).toMatchObject({ status: 404, body: { error: { code: 'VG_ERR_ORDER_NOT_FOUND' } } });
    const cancelUnknown = await call(`${localUrl}/api/orders/999/cancel`, { body: {} });
    expect(cancelUnknown).toMatchObject({ status: 404, body: { error: { code: 'VG_ERR_ORDER_NOT_FOUND' } } });
    const foreign = await call(`${localUrl}/api/orders`, { body: { slot: 'A1' }, headers: { origin: 'http://example.com' } });
    expect(foreign).toMatchObject({ status: 403, body: { error: { code: 'VG_ERR_FORBIDDEN' } } });
    const form = await call(`${localUrl}/api/orders`, { body: 'slot=A1', headers: { 'content-type': 'text/plain' } });
    expect(form).toMatchObject({ status: 415, body: { error: { code: 'VG_ERR_BAD_REQUEST' } } });
    const badRefill = await call(`${localUrl}/api/slots/A1/refill`, { body: { count: -1 } });
    expect(badRefill).toMatchObject({ status: 400, body: { error: { code: 'VG_ERR_BAD_REQUEST' } } });
  });

  it('a cancel after the payment is 409 VG_ERR_ORDER_STATE', async () => {
    const { localUrl, ctx } = await start();
    const created = await call(`${localUrl}/api/orders`, { body: { slot: 'A1' } });
    expect(created.status).toBe(201);
    const orderId = created.body.orderId as number;
    await ctx.sandbox!.payments.pay(created.body.invoiceId as string);
    await waitFor(() => ctx.orders.get(orderId)!.state === 'vended', { what: 'vended' });
    const late = await call(`${localUrl}/api/orders/${orderId}/cancel`, { body: {} });
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'VG_ERR_ORDER_STATE' } } });
  });
});
