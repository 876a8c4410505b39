import { describe, expect, it } from 'vitest';
import { createFakeKioskDeps } from '../fakes/kiosk-deps.js';
import { kioskForInject, startKiosk } from './harness.js';

describe('sandbox pay page (demo only)', () => {
  async function withInvoice() {
    const deps = createFakeKioskDeps({ sandbox: true });
    const server = kioskForInject(deps);
    await server.inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A1' } });
    return { deps, server };
  }

  it('shows the amount with its currency symbol, the reference, the status and a Pay button', async () => {
    const { server } = await withInvoice();
    const res = await server.inject({ method: 'GET', url: '/sandbox/pay/sb_1' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('<p class="amount" id="amount">₮2,500</p>');
    expect(res.body).toContain('<dd id="reference">vm-test-1-1</dd>');
    expect(res.body).toContain('data-status="pending"');
    expect(res.body).toMatch(/<button type="button" id="pay" data-invoice-id="sb_1">Pay<\/button>/);
  });

  it('pays with POST → 204, after which the page shows the invoice as paid and no button', async () => {
    const { deps, server } = await withInvoice();
    const pay = await server.inject({ method: 'POST', url: '/sandbox/pay/sb_1' });
    expect(pay.statusCode).toBe(204);
    expect(deps.calls.pay).toEqual(['sb_1']);
    const page = await server.inject({ method: 'GET', url: '/sandbox/pay/sb_1' });
    expect(page.body).toContain('data-status="paid"');
    expect(page.body).toMatch(/id="pay" data-invoice-id="sb_1" hidden>/);
  });

  it('maps a refused payment to its error code and status', async () => {
    const { server } = await withInvoice();
    await server.inject({ method: 'POST', url: '/sandbox/pay/sb_1' });
    const again = await server.inject({ method: 'POST', url: '/sandbox/pay/sb_1' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ error: { code: 'VG_ERR_ORDER_STATE', message: 'invoice sb_1 is paid' } });
  });

  it('shows an expired invoice as expired, without a Pay button', async () => {
    const { deps, server } = await withInvoice();
    deps.clock.advance(121_000);
    const page = await server.inject({ method: 'GET', url: '/sandbox/pay/sb_1' });
    expect(page.body).toContain('data-status="expired"');
    expect(page.body).toMatch(/id="pay"[^>]* hidden>/);
  });

  it('escapes every value it shows', async () => {
    const { deps, server } = await withInvoice();
    deps.invoices.set('sb_x', {
      id: 'sb_x',
      amount: 100,
      currency: 'MNT',
      reference: '<script>alert("x")</script>&\'',
      status: '<img src=x onerror=alert(1)>',
      expiresAt: deps.clock.now() + 60_000,
    });
    const page = await server.inject({ method: 'GET', url: '/sandbox/pay/sb_x' });
    expect(page.body).not.toContain('<script>alert');
    expect(page.body).not.toContain('<img');
    expect(page.body).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;');
    expect(page.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('answers 404 for an unknown invoice and 400 for an id that cannot be one, paying nothing', async () => {
    const { deps, server } = await withInvoice();
    expect((await server.inject({ method: 'GET', url: '/sandbox/pay/sb_404' })).statusCode).toBe(404);
    const hostile = await server.inject({ method: 'POST', url: '/sandbox/pay/%3Cscript%3E' });
    expect(hostile.statusCode).toBe(400);
    expect(hostile.json().error.code).toBe('VG_ERR_BAD_REQUEST');
    expect(deps.calls.pay).toEqual([]);
  });

  it('serves its script and stylesheet', async () => {
    const { url } = await startKiosk(createFakeKioskDeps({ sandbox: true }));
    const script = await fetch(`${url}/sandbox/assets/pay.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${url}/sandbox/assets/pay.css`)).status).toBe(200);
    expect((await fetch(`${url}/sandbox/assets/..%2Fsandbox-page.ts`)).status).toBe(404);
  });

  it('does not exist when the provider is not the sandbox', async () => {
    const deps = createFakeKioskDeps();
    const server = kioskForInject(deps);
    await server.inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A1' } });
    expect((await server.inject({ method: 'GET', url: '/sandbox/pay/sb_1' })).statusCode).toBe(404);
    expect((await server.inject({ method: 'POST', url: '/sandbox/pay/sb_1' })).statusCode).toBe(404);
    expect((await server.inject({ method: 'GET', url: '/sandbox/assets/pay.js' })).statusCode).toBe(404);
  });
});
