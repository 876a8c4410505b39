import { describe, expect, it } from 'vitest';
import { createSimulator, describeSimulator } from '../../src/simulator/index.js';
import { geregeClient, intentBody, invoiceBody, qutpayClient, startSimulator } from './harness.js';

describe('simulator admin and pay page', () => {
  it('the pay page shows the amount and a pay button; opening it claims a gerege intent; the button pays it', async () => {
    const sim = await startSimulator({ provider: 'gerege' });
    const api = await geregeClient(sim);
    const { json: intent } = await api.post('/payment-intents', intentBody(), 'a-1');
    const page = await fetch(intent.pay_url);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain('Pay 1500 MNT');
    expect(html).toContain(`action="/__sim/pay/${intent.id}?format=html"`);
    expect((await api.get(`/payment-intents/${intent.id}`)).json.status).toBe('claimed');

    const paid = await fetch(`${sim.url}/__sim/pay/${intent.id}?format=html`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(paid.status).toBe(200);
    expect(await paid.text()).toContain('succeeded');
    expect((await api.get(`/payment-intents/${intent.id}`)).json.status).toBe('succeeded');
    expect(await (await fetch(intent.pay_url)).text()).toContain('can no longer be paid');
  });

  it('POST /__sim/pay/:id pays over HTTP (optionally another amount), 404 for an unknown id, 409 when not payable', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const api = qutpayClient(sim);
    const { json: invoice } = await api.post('/api/v1/invoices', invoiceBody(), 'a-2');
    const pay = (id: string, body?: unknown) =>
      fetch(`${sim.url}/__sim/pay/${id}`, {
        method: 'POST',
        ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
      });
    const ok = await pay(invoice.id, { amount: 2400 });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ id: invoice.id, status: 'paid' });
    expect((await api.get(`/api/v1/invoices/${invoice.id}`)).json.amount).toBe(2400);
    expect((await pay(invoice.id)).status).toBe(409);
    expect((await pay('inv_unknown')).status).toBe(404);
  });

  it('POST /__sim/expire/:id expires now; GET /__sim/records returns the records; admin calls are not in requests', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const api = qutpayClient(sim);
    const { json: invoice } = await api.post('/api/v1/invoices', invoiceBody(), 'a-3');
    const expired = await fetch(`${sim.url}/__sim/expire/${invoice.id}`, { method: 'POST' });
    expect(await expired.json()).toEqual({ id: invoice.id, status: 'expired' });
    const records = (await (await fetch(`${sim.url}/__sim/records`)).json()) as any;
    expect(records.invoices.map((i: any) => [i.id, i.status])).toEqual([[invoice.id, 'expired']]);
    expect(records.requests.map((r: any) => `${r.method} ${r.path} ${r.status}`)).toEqual(['POST /api/v1/invoices 201']);
    expect(records.events.map((e: any) => e.event)).toEqual(['invoice.pending', 'invoice.expired']);
  });

  it('records() is a copy: changing it does not change the simulator', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'a-4');
    const copy = sim.records();
    copy.invoices[0]!.status = 'paid';
    copy.events.length = 0;
    expect(sim.records().invoices[0]!.status).toBe('pending');
    expect(sim.records().events).toHaveLength(1);
  });

  it('unknown routes answer 404 in the provider error shape', async () => {
    const gerege = await startSimulator({ provider: 'gerege' });
    const answer = await fetch(`${gerege.url}/v2/nothing`);
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as any).error.code).toBe('not_found');
  });

  it('describeSimulator prints the URL, the config lines and the secrets to paste', async () => {
    const gerege = await startSimulator({
      provider: 'gerege',
      clientSecret: 'cs-1',
      webhookSecret: 'wh-1',
      webhookUrl: 'http://127.0.0.1:8787/webhooks/gerege',
    });
    const text = describeSimulator(gerege);
    expect(text).toContain(gerege.url);
    expect(text).toContain(`baseUrl: ${gerege.url}`);
    expect(text).toContain('clientId: sim-client');
    expect(text).toContain('VENDGATE_PROVIDER_CLIENT_SECRET=cs-1');
    expect(text).toContain('VENDGATE_WEBHOOK_SECRETS=wh-1');
    expect(text).toContain('http://127.0.0.1:8787/webhooks/gerege');
    const qutpay = await startSimulator({ provider: 'qutpay' });
    expect(describeSimulator(qutpay)).toContain('VENDGATE_PROVIDER_API_KEY=qp_test_simulator');
  });

  it('publicUrl sets the base of pay URLs for a phone that reaches the simulator by another address', async () => {
    const sim = await startSimulator({ provider: 'qutpay', publicUrl: 'http://192.168.1.20:9000/' });
    const { json } = await qutpayClient(sim).post('/api/v1/invoices', invoiceBody(), 'a-5');
    expect(json.payUrl).toBe(`http://192.168.1.20:9000/__sim/pay/${json.id}`);
    expect(json.qr).toBe(json.payUrl);
  });

  it('refuses an unknown provider, a second start, and invalid initial faults', async () => {
    expect(() => createSimulator({ provider: 'paypal' as never })).toThrow(/gerege.*qutpay/);
    expect(() => createSimulator({ provider: 'qutpay', faults: { dropWebhook: 3 } })).toThrow(/dropWebhook/);
    const sim = await startSimulator({ provider: 'qutpay' });
    await expect(sim.start()).rejects.toThrow(/already started/);
  });
});
