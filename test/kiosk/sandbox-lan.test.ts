import { afterEach, describe, expect, it } from 'vitest';
import { lanAddress } from '../../src/kiosk/sandbox-lan.js';
import { settingsSchema } from '../../src/settings/index.js';
import { freePort, orderOn, startService, waitVended, type Service } from '../helpers/service.js';

const services: Service[] = [];
afterEach(async () => {
  for (const svc of services.splice(0)) await svc.stop();
});

const address = lanAddress();

describe('demo: a phone on the same network can pay', () => {
  it('with provider.sandboxLanPort the pay URL and QR name the LAN address, and that listener serves only the pay page', async () => {
    expect(address, 'this machine needs a non-loopback IPv4 address for this test').not.toBeNull();
    const lanPort = await freePort();
    const svc = await startService({ config: { provider: { name: 'sandbox', sandboxLanPort: lanPort } } });
    services.push(svc);
    const created = await orderOn(svc.localUrl);
    expect(created.payUrl).toMatch(new RegExp(`^http://${address!.replace(/\./g, '\\.')}:${lanPort}/sandbox/pay/sb_`));

    const page = await fetch(created.payUrl);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('id="pay"');
    expect((await fetch(created.payUrl, { method: 'POST' })).status).toBe(204);
    await waitVended(svc.localUrl, created.orderId, 'the order to be vended');

    // The LAN listener is not the kiosk: no API, no metrics, no kiosk page.
    for (const path of ['/api/orders/1', '/metrics', '/healthz', '/', '/api/state']) {
      expect((await fetch(`http://${address}:${lanPort}${path}`)).status, path).toBe(404);
    }
  });

  it('a named address is used as given; without the setting the pay URL stays on the local listener', async () => {
    const lanPort = await freePort();
    const svc = await startService({ config: { provider: { name: 'sandbox', sandboxLanPort: lanPort, sandboxLanAddress: '127.0.0.1' } } });
    services.push(svc);
    const created = await orderOn(svc.localUrl);
    expect(created.payUrl.startsWith(`http://127.0.0.1:${lanPort}/sandbox/pay/`)).toBe(true);

    const plain = await startService();
    services.push(plain);
    const order = await orderOn(plain.localUrl);
    expect(order.payUrl.startsWith(`${plain.localUrl}/sandbox/pay/`)).toBe(true);
  });

  it('a real provider refuses provider.sandboxLanPort with a clear error', () => {
    const result = settingsSchema().safeParse({
      device: { id: 'x', catalog: [{ slot: 'A', name: 'a', price: 1 }] },
      provider: { name: 'qutpay', baseUrl: 'https://api.example.com', apiKey: 'qp_test_x', webhookSecrets: ['s'], sandboxLanPort: 8090 },
    });
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toContain(
      'provider.sandboxLanPort: only the sandbox has a pay page here; qutpay shows its own',
    );
  });
});
