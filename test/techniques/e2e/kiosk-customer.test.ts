import { describe, expect, it } from 'vitest';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { cleanup } from '../../helpers/cleanup.js';
import QRCode from 'qrcode';
import { createFakeKioskDeps, type FakeKioskDeps } from '../../fakes/kiosk-deps.js';
import { createQrRenderer } from '../../../src/kiosk/qr.js';
import { chromiumForFile, fakeKioskPage, layoutProblems, screenshot, waitForScreen } from '../../kiosk/browser.js';

/** What a customer meets on every screen: which machine, whom to call, which apps pay; a page fingers cannot zoom. */
const chromium = chromiumForFile();
const defer = cleanup();

const open = (deps: FakeKioskDeps, context: BrowserContextOptions = {}): Promise<Page> => fakeKioskPage(chromium(), defer, deps, context);

/** The element is wholly on screen, and inside <main> when it is part of it (main clips what overflows). */
async function inView(page: Page, selector: string): Promise<boolean> {
  const box = await page.locator(selector).boundingBox();
  const inMain = await page.locator(selector).evaluate((el) => (el as any).closest('main') !== null);
  const frame = inMain ? (await page.locator('main').boundingBox())! : { x: 0, y: 0, width: 800, height: 480 };
  return (
    box !== null &&
    box.y >= frame.y - 1 &&
    box.y + box.height <= frame.y + frame.height + 1 &&
    box.x >= frame.x - 1 &&
    box.x + box.width <= frame.x + frame.width + 1
  );
}

describe('kiosk for customers (Chromium 800×480)', () => {
  it('every screen shows the machine id and the support contact, inside the screen and readable', async () => {
    const deps = createFakeKioskDeps();
    deps.setState({ supportContact: '+976 7011 2233' });
    const page = await open(deps);
    await waitForScreen(page, 'catalog');
    const created = await deps.createImpl({ slot: 'A1', source: 'kiosk' });
    const order = deps.orderTable.get(created.orderId)!;
    const phases = [
      ['idle', 'catalog'],
      ['awaiting_payment', 'pay'],
      ['paid', 'progress'],
      ['vended', 'done'],
      ['refunding', 'refund'],
      ['vend_uncertain', 'operator'],
      ['out_of_service', 'operator'],
    ] as const;
    for (const [phase, screen] of phases) {
      deps.setState({
        phase,
        order: phase === 'idle' || phase === 'out_of_service' ? null : { ...order, state: phase },
        resultScreenSec: 60,
      });
      await waitForScreen(page, screen);
      expect(await page.textContent('#help-device'), screen).toBe('Machine: vm-test-1');
      expect(await page.textContent('#help-contact'), screen).toBe('Help: +976 7011 2233');
      expect(await inView(page, '#help-device'), screen).toBe(true);
      expect(await inView(page, '#help-contact'), screen).toBe(true);
      expect(await layoutProblems(page), screen).toEqual([]);
    }
    await screenshot(page, '30-help-line');
  });

  it('without a support contact the line shows the machine id only', async () => {
    const deps = createFakeKioskDeps();
    const page = await open(deps);
    await waitForScreen(page, 'catalog');
    expect(await page.textContent('#help-device')).toBe('Machine: vm-test-1');
    expect(await page.locator('#help-contact').isHidden()).toBe(true);
  });

  it("the pay screen says which apps pay: the provider's own line, or the operator's list, in the customer's language", async () => {
    const deps = createFakeKioskDeps();
    deps.setState({ provider: 'gerege' });
    const page = await open(deps);
    await waitForScreen(page, 'catalog');
    await page.click('.product[data-slot="A1"]');
    await waitForScreen(page, 'pay');
    expect(await page.textContent('#pay-apps')).toBe('Pay in the Gerege app or your bank’s app');
    // The longest line in every language still leaves the item, the price and Cancel on the screen.
    for (const lang of ['mn', 'kk', 'ru', 'en']) {
      await page.click(`button[data-lang="${lang}"]`);
      await page.waitForFunction((l) => (globalThis as any).document.documentElement.lang === l, lang);
      for (const selector of ['#pay-item', '#pay-amount', '#pay-apps', '#countdown', '#cancel'])
        expect(await inView(page, selector), `${lang} ${selector}`).toBe(true);
    }
    await page.click('button[data-lang="en"]');
    deps.setState({ paymentApps: ['Khan Bank', 'Golomt', 'SocialPay'] });
    await page.waitForFunction(
      () => (globalThis as any).document.getElementById('pay-apps').textContent === 'Pay with: Khan Bank, Golomt, SocialPay',
    );
    await page.click('button[data-lang="mn"]');
    await page.waitForFunction(
      () => (globalThis as any).document.getElementById('pay-apps').textContent === 'Төлөх апп: Khan Bank, Golomt, SocialPay',
    );
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '31-pay-apps');
  });

  it('the QR has a quiet zone of 4 modules', async () => {
    const url = 'http://127.0.0.1:8080/sandbox/pay/sb_quiet';
    const svg = await createQrRenderer().svg(url);
    const size = QRCode.create(url, {}).modules.size;
    expect(svg).toContain(`viewBox="0 0 ${size + 8} ${size + 8}"`);
  });

  // Headless Chromium synthesizes a pinch from a touchpad (ctrl+wheel), not from a touchscreen; the
  // touchscreen is covered by touch-action and the viewport meta, checked as styles here.
  it.each([
    ['desktop', {}],
    ['touch screen', { hasTouch: true, isMobile: true }],
  ] as const)('a pinch does not zoom the page (%s), overscroll is off, the viewport refuses scaling', async (_name, context) => {
    const pinch = async (page: Page) => {
      const session = await page.context().newCDPSession(page);
      await session.send('Input.synthesizePinchGesture', { x: 400, y: 240, scaleFactor: 3, gestureSourceType: 'mouse' });
      return page.evaluate(() => (globalThis as any).visualViewport.scale as number);
    };
    const deps = createFakeKioskDeps();
    const page = await open(deps, context);
    await waitForScreen(page, 'catalog');
    expect(await pinch(page)).toBe(1);
    expect(
      await page.evaluate(() => {
        const { document: doc, getComputedStyle: style } = globalThis as any;
        return [style(doc.documentElement).overscrollBehaviorY, style(doc.body).overscrollBehaviorY, style(doc.body).touchAction];
      }),
    ).toEqual(['none', 'none', 'pan-x pan-y']);
    expect(await page.getAttribute('meta[name="viewport"]', 'content')).toContain('user-scalable=no');

    // The same pinch on a page without the lock does zoom: the check above can fail.
    const plain = await (await chromium().newContext({ viewport: { width: 800, height: 480 }, ...context })).newPage();
    await plain.setContent('<meta name="viewport" content="width=device-width, initial-scale=1"><body style="height:2000px">plain</body>');
    expect(await pinch(plain)).toBeGreaterThan(1.5);
  });
});
