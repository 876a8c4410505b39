import { describe, expect, it } from 'vitest';
import QRCode from 'qrcode';
import { createFakeKioskDeps, FAKE_PAY_BASE } from '../fakes/kiosk-deps.js';
import { kioskForInject, startKiosk } from './harness.js';
import { decodeQrSvg } from './qr-svg.js';

describe('the QR the kiosk serves', () => {
  it('encodes exactly the payUrl of the order it was created with', async () => {
    const { url } = await startKiosk(createFakeKioskDeps());
    const res = await fetch(`${url}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"slot":"A1"}',
    });
    const body = (await res.json()) as { payUrl: string; qrSvg: string };
    expect(body.payUrl).toBe(`${FAKE_PAY_BASE}sb_1`);
    expect(decodeQrSvg(body.qrSvg)).toBe(body.payUrl);
    // And it is what qrcode itself renders for that URL, with the 4-module quiet zone of ISO/IEC 18004.
    expect(body.qrSvg).toBe(await QRCode.toString(body.payUrl, { type: 'svg', margin: 4 }));
  });

  it('encodes the payUrl of the order on screen in /api/state and on the order itself', async () => {
    const deps = createFakeKioskDeps();
    const longUrl = `https://pay.example.mn/i/pi_${'x'.repeat(120)}?ref=vm-test-1-1&lang=mn`;
    const inner = deps.createImpl;
    deps.createImpl = async (input) => {
      const created = await inner(input);
      deps.orderTable.set(created.orderId, { ...deps.orderTable.get(created.orderId)!, payUrl: longUrl });
      return { ...created, payUrl: longUrl };
    };
    const server = kioskForInject(deps);
    const created = (await server.inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A2' } })).json();
    deps.setState({ phase: 'awaiting_payment', order: deps.orderTable.get(created.orderId)! });
    const state = (await server.inject({ method: 'GET', url: '/api/state' })).json();
    const order = (await server.inject({ method: 'GET', url: `/api/orders/${created.orderId}` })).json();
    expect(decodeQrSvg(created.qrSvg)).toBe(longUrl);
    expect(decodeQrSvg(state.qrSvg)).toBe(longUrl);
    expect(decodeQrSvg(order.qrSvg)).toBe(longUrl);
  });

  it('is null in the response when the order has no payUrl yet', async () => {
    const deps = createFakeKioskDeps();
    deps.createImpl = async () => ({
      orderId: 7,
      reference: 'vm-test-1-7',
      state: 'creating',
      invoiceId: null,
      payUrl: null,
      expiresAt: null,
    });
    const res = await kioskForInject(deps).inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A1' } });
    expect(res.statusCode).toBe(201);
    expect(res.json().qrSvg).toBeNull();
  });
});
