import { describe, expect, it } from 'vitest';
import { createFakeKioskDeps, FAKE_PAY_BASE } from '../fakes/kiosk-deps.js';
import { kioskForInject, startKiosk } from './harness.js';

describe('local API routes', () => {
  it('creates an order for a slot and answers 201 with the invoice, its pay URL and its QR', async () => {
    const deps = createFakeKioskDeps();
    const { url } = await startKiosk(deps);
    const res = await fetch(`${url}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: 'A1' }),
    });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body).toEqual({
      orderId: 1,
      reference: 'vm-test-1-1',
      state: 'awaiting_payment',
      invoiceId: 'sb_1',
      payUrl: `${FAKE_PAY_BASE}sb_1`,
      qrSvg: expect.stringMatching(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/),
      expiresAt: expect.any(String),
    });
    expect(deps.calls.create).toEqual([{ slot: 'A1', source: 'kiosk' }]);
  });

  it('creates a turnstile order from an empty object, without a slot', async () => {
    const deps = createFakeKioskDeps({ mode: 'turnstile' });
    const server = kioskForInject(deps);
    const res = await server.inject({ method: 'POST', url: '/api/orders', payload: {} });
    expect(res.statusCode).toBe(201);
    expect(deps.calls.create).toEqual([{ source: 'kiosk' }]);
    expect(Object.keys(deps.calls.create[0]!)).not.toContain('slot');
  });

  it('returns an order with its history, and its QR while it awaits payment', async () => {
    const deps = createFakeKioskDeps();
    const server = kioskForInject(deps);
    await server.inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A2' } });
    const res = await server.inject({ method: 'GET', url: '/api/orders/1' });
    expect(res.statusCode).toBe(200);
    const order = res.json();
    expect(order).toMatchObject({ orderId: 1, state: 'awaiting_payment', itemName: 'Coffee', amount: 4000 });
    expect(order.history).toHaveLength(1);
    expect(order.qrSvg).toMatch(/^<svg/);
  });

  it('leaves the QR out of an order that no longer awaits payment', async () => {
    const deps = createFakeKioskDeps();
    const server = kioskForInject(deps);
    await server.inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A1' } });
    const canceled = await server.inject({
      method: 'POST',
      url: '/api/orders/1/cancel',
      headers: { 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(canceled.statusCode).toBe(200);
    expect(canceled.json()).toMatchObject({ orderId: 1, state: 'canceled' });
    expect(canceled.json()).not.toHaveProperty('qrSvg');
    expect(deps.calls.cancel).toEqual([1]);
    const read = await server.inject({ method: 'GET', url: '/api/orders/1' });
    expect(read.json().state).toBe('canceled');
    expect(read.json().history.map((h: { to: string }) => h.to)).toEqual(['awaiting_payment', 'canceled']);
  });

  it('answers 404 with VG_ERR_ORDER_NOT_FOUND for an unknown order', async () => {
    const server = kioskForInject(createFakeKioskDeps());
    const res = await server.inject({ method: 'GET', url: '/api/orders/999' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: 'VG_ERR_ORDER_NOT_FOUND', message: 'order 999 does not exist' } });
  });

  it('serves the device state, with the QR of the order on screen', async () => {
    const deps = createFakeKioskDeps();
    const server = kioskForInject(deps);
    const idle = (await server.inject({ method: 'GET', url: '/api/state' })).json();
    expect(idle).toMatchObject({ deviceId: 'vm-test-1', phase: 'idle', qrSvg: null, catalog: deps.current.catalog });
    await server.inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A1' } });
    deps.setState({ phase: 'awaiting_payment', order: deps.orderTable.get(1)! });
    const paying = (await server.inject({ method: 'GET', url: '/api/state' })).json();
    expect(paying.phase).toBe('awaiting_payment');
    expect(paying.order.payUrl).toBe(`${FAKE_PAY_BASE}sb_1`);
    expect(paying.qrSvg).toMatch(/^<svg/);
  });

  it('reports health as 200 when every check passes and 503 when one fails', async () => {
    const deps = createFakeKioskDeps();
    const server = kioskForInject(deps);
    const ok = await server.inject({ method: 'GET', url: '/healthz' });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ ok: true, checks: { database: { ok: true, detail: 'ok' } } });
    deps.healthResult = { ok: false, checks: { provider: { ok: false, detail: 'unreachable' } } };
    const failing = await server.inject({ method: 'GET', url: '/healthz' });
    expect(failing.statusCode).toBe(503);
    expect(failing.json()).toEqual({ ok: false, checks: { provider: { ok: false, detail: 'unreachable' } } });
  });

  it('reports 503, not 500, when a health check throws', async () => {
    const deps = createFakeKioskDeps();
    deps.health = () => {
      throw new Error('database is locked');
    };
    const res = await kioskForInject(deps).inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(503);
    expect(res.json().ok).toBe(false);
    expect(res.body).not.toContain('database is locked');
  });

  it('serves metrics as Prometheus text exposition 0.0.4', async () => {
    const deps = createFakeKioskDeps();
    const { url } = await startKiosk(deps);
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await res.text()).toBe(deps.metricsText);
  });

  it('serves the kiosk page, its script, styles and translations from public/', async () => {
    const { url } = await startKiosk(createFakeKioskDeps());
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('<script type="module" src="/app.js"></script>');
    for (const [path, type] of [
      ['/app.js', /javascript/],
      ['/style.css', /^text\/css/],
      ['/i18n/mn.json', /^application\/json/],
    ] as const) {
      const res = await fetch(`${url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toMatch(type);
    }
  });

  it("answers the browser's /favicon.ico with an icon (no 404 in the kiosk's log), and the page names it", async () => {
    const { url } = await startKiosk(createFakeKioskDeps());
    const icon = await fetch(`${url}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/x-icon');
    const bytes = Buffer.from(await icon.arrayBuffer());
    // An ICO directory (reserved 0, type 1, one image) holding a PNG.
    expect([...bytes.subarray(0, 6)]).toEqual([0, 0, 1, 0, 1, 0]);
    expect(bytes.subarray(22, 30).toString('latin1')).toBe('\x89PNG\r\n\x1a\n');
    expect(await (await fetch(`${url}/`)).text()).toContain('<link rel="icon" href="/favicon.ico" />');
  });

  it('sends a self-only Content-Security-Policy and nosniff on pages, API answers and errors', async () => {
    const server = kioskForInject(createFakeKioskDeps());
    for (const url of ['/', '/app.js', '/api/state', '/api/orders/abc', '/nope', '/healthz']) {
      const res = await server.inject({ method: 'GET', url });
      expect(res.headers['content-security-policy'], url).toContain("default-src 'self'");
      expect(res.headers['content-security-policy'], url).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
    }
  });

  it('answers unknown paths with 404 in the JSON error shape', async () => {
    const res = await kioskForInject(createFakeKioskDeps()).inject({ method: 'GET', url: '/api/nothing' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('VG_ERR_BAD_REQUEST');
  });

  it('listens on the host it is given and reports the bound port', async () => {
    const { url, port } = await startKiosk(createFakeKioskDeps());
    expect(port).toBeGreaterThan(0);
    expect(url).toBe(`http://127.0.0.1:${port}`);
  });

  it('can be stopped twice, and before it was ever started', async () => {
    const deps = createFakeKioskDeps();
    const never = kioskForInject(deps);
    await never.stop();
    await never.stop();
    const { server, url } = await startKiosk(deps);
    await server.stop();
    await server.stop();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});

describe('caching', () => {
  it('marks live answers no-store and the page no-cache, so a restart never shows stale data', async () => {
    const server = kioskForInject(createFakeKioskDeps());
    for (const url of ['/api/state', '/healthz', '/metrics', '/api/orders/404']) {
      expect((await server.inject({ method: 'GET', url })).headers['cache-control'], url).toBe('no-store');
    }
    for (const url of ['/', '/app.js', '/i18n/en.json']) {
      expect((await server.inject({ method: 'GET', url })).headers['cache-control'], url).toBe('no-cache');
    }
  });
});
