import { describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { appsPerTest } from '../helpers/app.js';

const PIN = '482916';

/**
 * The kiosk's service menu through the real composition (settings, catalog, outbox, selftest,
 * request guard) on a real loopback socket: nothing without the PIN, a lock-out after wrong PINs,
 * every action audited as the service menu's, and no route that moves money.
 */
describe('the service menu on the local listener', () => {
  const newApp = appsPerTest();
  let app: App | null = null;

  async function start(pin: string | null = PIN) {
    app = newApp((dir) => createApp(testSettings(dir, pin ? { kiosk: { servicePin: pin } } : {}), { logger: silentLogger() }));
    const { localUrl } = await app.start();
    const call = async (method: string, path: string, body?: unknown, token?: string) => {
      const response = await fetch(`${localUrl}${path}`, {
        method,
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
    };
    const login = async () => (await call('POST', '/api/service/login', { pin: PIN })).body.token as string;
    const events = () =>
      (app!.context().db.prepare("SELECT payload FROM outbox WHERE kind = 'event' ORDER BY seq").all() as { payload: string }[]).map(
        (row) => JSON.parse(row.payload) as Record<string, any>,
      );
    return { call, login, events, localUrl, ctx: app.context() };
  }

  it('without a PIN configured: the menu says it is off and how to turn it on, and nothing behind it answers', async () => {
    const { call } = await start(null);
    const status = await call('GET', '/api/service/status');
    expect(status.body).toMatchObject({ enabled: false });
    expect(status.body.message).toContain('VENDGATE_SERVICE_PIN');
    expect((await call('POST', '/api/service/login', { pin: PIN })).status).toBe(403);
    expect((await call('GET', '/api/service/overview')).status).toBe(403);
  });

  it('nothing is served without a valid session: 401 with VG_ERR_UNAUTHORIZED, and a wrong PIN gives no token', async () => {
    const { call } = await start();
    expect((await call('GET', '/api/service/status')).body.enabled).toBe(true);
    for (const [method, path, body] of [
      ['GET', '/api/service/overview', undefined],
      ['POST', '/api/service/selftest', {}],
      ['POST', '/api/service/slots/A1/refill', { count: 5 }],
      ['POST', '/api/service/slots/A1/clear-jam', {}],
    ] as const) {
      const answer = await call(method, path, body, 'made-up-token');
      expect(answer.status, path).toBe(401);
      expect(answer.body.error.code).toBe('VG_ERR_UNAUTHORIZED');
    }
    const wrong = await call('POST', '/api/service/login', { pin: '000000' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.token).toBeUndefined();
    expect(app!.context().catalog.slots.get('A1').stock).toBeNull();
  });

  it('five wrong PINs lock the menu out, the right PIN included, with Retry-After', async () => {
    const { call } = await start();
    for (let i = 0; i < 4; i++) expect((await call('POST', '/api/service/login', { pin: '111111' })).status).toBe(401);
    const fifth = await call('POST', '/api/service/login', { pin: '111111' });
    expect(fifth.status).toBe(429);
    expect(Number(fifth.headers.get('retry-after'))).toBeGreaterThan(0);
    const right = await call('POST', '/api/service/login', { pin: PIN });
    expect(right.status).toBe(429);
    expect(right.body.token).toBeUndefined();
  });

  it('refill and clear-jam go through the catalog and are audited with by: service-menu', async () => {
    const { call, login, events, ctx } = await start();
    const token = await login();
    const refilled = await call('POST', '/api/service/slots/A1/refill', { count: 7 }, token);
    expect(refilled.status).toBe(200);
    expect(ctx.catalog.slots.get('A1').stock).toBe(7);
    expect(events()).toContainEqual(expect.objectContaining({ type: 'stock.refilled', slot: 'A1', stock: 7, by: 'service-menu' }));
    // Jammed the way the vend runner jams it (failures in a row), then cleared on the menu.
    for (let i = 0; i < 3; i++) ctx.catalog.slots.failed('A2', 'machine answered "ERR A2 JAM"');
    expect(ctx.catalog.slots.get('A2').jammed).toBe(true);
    const cleared = await call('POST', '/api/service/slots/A2/clear-jam', {}, token);
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ slot: 'A2', jammed: false, wasJammed: true });
    expect(events()).toContainEqual(expect.objectContaining({ type: 'slot.cleared', slot: 'A2', by: 'service-menu' }));
    const overview = await call('GET', '/api/service/overview', undefined, token);
    expect(overview.body.identity).toMatchObject({ deviceId: 'vm-test', provider: 'sandbox' });
    expect(overview.body.identity.database).toContain('vendgate.db');
    expect(overview.body.slots).toContainEqual(expect.objectContaining({ slot: 'A1', stock: 7 }));
    expect(overview.body.sales).toMatchObject({ paid: { count: 0 } });
    expect(Array.isArray(overview.body.orders) && Array.isArray(overview.body.alarms)).toBe(true);
    // Bad input changes nothing.
    const bad = await call('POST', '/api/service/slots/A1/refill', { count: -1 }, token);
    expect(bad.status).toBe(400);
    expect(ctx.catalog.slots.get('A1').stock).toBe(7);
  });

  it('the selftest runs in-process, one at a time, and shows its PASS/WARN/FAIL lines', async () => {
    const { call, login } = await start();
    const token = await login();
    const [first, second] = await Promise.all([
      call('POST', '/api/service/selftest', {}, token),
      call('POST', '/api/service/selftest', {}, token),
    ]);
    const statuses = [first.status, second.status].sort();
    expect(statuses).toEqual([200, 409]);
    const report = first.status === 200 ? first.body : second.body;
    expect(report.checks.length).toBeGreaterThan(3);
    for (const check of report.checks) expect(['PASS', 'WARN', 'FAIL']).toContain(check.status);
  });

  it('no route moves money: refund, resolve and test vend do not exist behind the PIN', async () => {
    const { call, login } = await start();
    const token = await login();
    for (const path of ['/api/service/orders/1/refund', '/api/service/orders/1/resolve', '/api/service/test-vend', '/api/service/refund']) {
      expect((await call('POST', path, {}, token)).status, path).toBe(404);
    }
  });

  it('logout ends the session; a request from a foreign page is still refused by the request guard', async () => {
    const { call, login, localUrl } = await start();
    const foreign = await fetch(`${localUrl}/api/service/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://evil.example' },
      body: JSON.stringify({ pin: PIN }),
    });
    expect(foreign.status).toBe(403);
    const token = await login();
    expect((await call('POST', '/api/service/logout', {}, token)).status).toBe(200);
    expect((await call('GET', '/api/service/overview', undefined, token)).status).toBe(401);
  });
});
