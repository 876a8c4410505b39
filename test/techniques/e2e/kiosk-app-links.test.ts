import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { cleanup } from '../../helpers/cleanup.js';
import { createFakeKioskDeps, type FakeKioskDeps } from '../../fakes/kiosk-deps.js';
import { chromiumForFile, fakeKioskPage, screenshot, waitForScreen } from '../../kiosk/browser.js';

/**
 * QPay answers each invoice with deep links into the bank apps (`urls[]`). A customer who holds the
 * phone that shows the pay page can tap one instead of scanning; the machine's own 800×480 screen
 * is no phone and shows none. What a provider sent is untrusted: only https or app schemes, shown
 * as text, never as markup.
 */
const chromium = chromiumForFile();
const defer = cleanup();

const PHONE = { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true };
const MACHINE = { viewport: { width: 800, height: 480 } };

const open = (deps: FakeKioskDeps, context: typeof PHONE | typeof MACHINE): Promise<Page> =>
  fakeKioskPage(chromium(), defer, deps, context);

const LINKS = [
  { name: 'Khan Bank', link: 'khanbank://q?qPay_QRcode=000201' },
  { name: 'Web wallet', link: 'https://wallet.example/pay?q=000201' },
  { name: '<img src=x onerror="window.pwned=1">', link: 'tdbbank://q?qPay_QRcode=000201' },
  { name: 'Evil script', link: 'javascript:window.pwned=2' },
  { name: 'Evil data', link: 'data:text/html,<script>window.pwned=3</script>' },
  { name: 'Plain http', link: 'http://wallet.example/pay' },
  { name: 'Quote breaker', link: 'xacbank://q?x="><script>window.pwned=4</script>' },
];

/** The kiosk page in `context`, moved from the catalog to the pay screen of an order whose provider sent LINKS. */
async function payScreen(context: typeof PHONE | typeof MACHINE): Promise<Page> {
  const deps = createFakeKioskDeps();
  const page = await open(deps, context);
  await waitForScreen(page, 'catalog');
  const created = await deps.createImpl({ slot: 'A1', source: 'kiosk' });
  deps.setState({ phase: 'awaiting_payment', order: { ...deps.orderTable.get(created.orderId)!, appLinks: LINKS } });
  await waitForScreen(page, 'pay');
  return page;
}

describe('bank-app links on the pay screen (Chromium)', () => {
  it('on a phone: one link per https or app-scheme entry, names as text, nothing else followed or run', async () => {
    const page = await payScreen(PHONE);
    await page.waitForSelector('#app-links:not([hidden])');
    const shown = await page.$$eval('#app-links-list a', (as) => as.map((a) => ({ name: a.textContent, link: a.getAttribute('href') })));
    expect(shown).toEqual([
      { name: 'Khan Bank', link: 'khanbank://q?qPay_QRcode=000201' },
      { name: 'Web wallet', link: 'https://wallet.example/pay?q=000201' },
      // Shown as its text, never as an element.
      { name: '<img src=x onerror="window.pwned=1">', link: 'tdbbank://q?qPay_QRcode=000201' },
    ]);
    expect(await page.$$('#app-links-list img, #app-links-list script')).toHaveLength(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.textContent('#app-links p')).toBe("On this phone? Pay in your bank's app:");
    await screenshot(page, '25-pay-app-links-phone');
  });

  it("on the machine's own screen: no links, the QR only", async () => {
    const page = await payScreen(MACHINE);
    await page.waitForSelector('#qr svg');
    expect(await page.isHidden('#app-links')).toBe(true);
    expect(await page.$$('#app-links-list a')).toHaveLength(0);
  });
});
