import { describe, expect, it } from 'vitest';
import { safeAppLinks, DEFAULT_APP_LINK_SCHEMES } from '../../src/orders/index.js';
import { composeMoneyPath, testMachine, testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { createFakeProvider } from '../fakes/provider.js';
import { createManualClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { orderView } from '../../src/orders/index.js';
import type { PaymentProvider } from '../../src/payments/index.js';

/** A provider's bank-app links are untrusted text: what is kept and shown. */
describe('bank-app links', () => {
  it('keeps https and the allowed app schemes, drops every other scheme, credentials, markup characters and empty names', () => {
    const links = safeAppLinks(
      [
        { name: ' Khan Bank ', link: 'khanbank://q?qPay_QRcode=1' },
        { name: 'Wallet', link: 'https://wallet.example/p?q=1' },
        { name: 'Script', link: 'javascript:alert(1)' },
        { name: 'Mixed case script', link: 'JavaScript:alert(1)' },
        { name: 'Data', link: 'data:text/html,x' },
        { name: 'Plain', link: 'http://wallet.example/' },
        { name: 'Creds', link: 'https://user:pw@wallet.example/' },
        { name: 'Quote', link: 'khanbank://q?x="><b>' },
        { name: 'Unknown app', link: 'someapp://q' },
        { name: '', link: 'khanbank://q' },
        { name: 'Bidi\u202Ename\u0000', link: 'https://wallet.example/' },
        'not an object',
        { name: 'No link' },
      ],
      DEFAULT_APP_LINK_SCHEMES,
    );
    expect(links).toEqual([
      { name: 'Khan Bank', link: 'khanbank://q?qPay_QRcode=1' },
      { name: 'Wallet', link: 'https://wallet.example/p?q=1' },
      { name: 'Bidiname', link: 'https://wallet.example/' },
    ]);
    expect(safeAppLinks([{ name: 'Sim', link: 'simbank://q' }], ['simbank'])).toEqual([{ name: 'Sim', link: 'simbank://q' }]);
    expect(safeAppLinks('nope')).toEqual([]);
    expect(safeAppLinks(Array.from({ length: 40 }, (_, i) => ({ name: `B${i}`, link: 'https://b.example/' })))).toHaveLength(16);
  });

  it("are kept with the order's invoice and read back through the order's view, never the money path's concern", async () => {
    const dir = tempDir();
    const clock = createManualClock();
    const fake = createFakeProvider({ now: clock.now });
    // A provider whose answer carries deep links, one of them hostile.
    const provider: PaymentProvider = {
      ...fake.provider,
      async createInvoice(request) {
        const invoice = await fake.provider.createInvoice(request);
        return {
          ...invoice,
          appLinks: [
            { name: 'Khan Bank', link: 'khanbank://q?qPay_QRcode=1' },
            { name: 'Script', link: 'javascript:alert(1)' },
          ],
        };
      },
    };
    const node = composeMoneyPath({
      settings: testSettings(dir.path),
      clock,
      logger: silentLogger(),
      provider,
      actuator: testMachine(''),
    });
    try {
      const order = await node.money.orders.create({ source: 'kiosk', slot: 'A1' });
      const row = node.orderRepository.get(order.id)!;
      expect(JSON.parse(row.app_links!)).toEqual([{ name: 'Khan Bank', link: 'khanbank://q?qPay_QRcode=1' }]);
      expect(orderView(row, []).appLinks).toEqual([{ name: 'Khan Bank', link: 'khanbank://q?qPay_QRcode=1' }]);
    } finally {
      node.db.close();
      dir.cleanup();
    }
  });
});
