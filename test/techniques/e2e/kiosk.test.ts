import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { cleanup } from '../../helpers/cleanup.js';
import { readSimLog, startService, writeServiceConfig } from './kiosk-service.js';
import { tempDir } from '../../helpers/temp.js';
import { chromiumForFile, freePort, layoutProblems, screenshot, waitForScreen } from '../../kiosk/browser.js';
import { decodeQrSvg } from '../../kiosk/qr-svg.js';
import { waitFor } from '../../helpers/wait.js';

type Service = Awaited<ReturnType<typeof startService>>;

const HOSTILE_NAME = '<img src=x onerror="document.title=1"> & Tea';
const CATALOG = [
  { slot: 'A1', name: 'Water 0.5 l', price: 1500 },
  { slot: 'A2', name: 'Cola 0.33 l', price: 2500 },
  { slot: 'B1', name: 'Chocolate bar', price: 3000 },
  { slot: 'B2', name: HOSTILE_NAME, price: 2000 },
];

const chromium = chromiumForFile();
const defer = cleanup();

type Overrides = Record<string, unknown> | ((dir: string) => Record<string, unknown>);

async function service(overrides: Overrides = {}, port = 0) {
  const dir = tempDir('vendgate-kiosk-e2e-');
  const sections = typeof overrides === 'function' ? overrides(dir.path) : overrides;
  const base = { device: { id: 'kiosk-e2e', mode: 'vending', currency: 'MNT', catalog: CATALOG } };
  const config = writeServiceConfig(dir.path, {
    ...base,
    http: { local: { host: '127.0.0.1', port }, webhook: { host: '127.0.0.1', port: 0 } },
    ...sections,
  });
  defer(dir, (d) => d.cleanup());
  const start = async () => defer(await startService(config), (running) => running.kill());
  return { dir, start, first: await start() };
}

async function kioskPage(url: string, viewport = { width: 800, height: 480 }): Promise<Page> {
  const context = defer(await chromium().newContext({ viewport }), (c) => c.close());
  const page = await context.newPage();
  await page.goto(url);
  return page;
}

async function currentOrder(svc: Service) {
  const state = await (await fetch(`${svc.url}/api/state`)).json();
  return state.order as { orderId: number; payUrl: string; reference: string };
}

async function payOnPhone(payUrl: string): Promise<{ paidAt: number; phone: Page }> {
  const phone = await defer(await chromium().newContext({ viewport: { width: 400, height: 720 } }), (c) => c.close()).newPage();
  await phone.goto(payUrl);
  await screenshot(phone, '04-sandbox-pay-page');
  const paid = phone.waitForResponse((res) => res.request().method() === 'POST' && res.url() === payUrl);
  await phone.click('#pay');
  expect((await paid).status()).toBe(204);
  const paidAt = Date.now();
  await phone.waitForSelector('#message:has-text("Paid")');
  return { paidAt, phone };
}

describe('kiosk page in Chromium against the real service (800×480)', () => {
  it('sells one item: choose, scan the QR, pay, "take your item" within 2 s, one actuation, back to idle', async () => {
    const { dir, first: svc } = await service();
    const page = await kioskPage(svc.url);
    await waitForScreen(page, 'catalog');
    expect(await page.evaluate(() => parseFloat(getComputedStyle(document.documentElement).fontSize))).toBeGreaterThanOrEqual(24);
    expect(await layoutProblems(page)).toEqual([]);
    // A product name with markup is shown as text, never parsed.
    const hostile = page.locator('button.product[data-slot="B2"] .name');
    expect(await hostile.textContent()).toBe(HOSTILE_NAME);
    expect(await page.locator('button.product img').count()).toBe(0);
    expect(await page.title()).toBe('vendgate');
    await screenshot(page, '01-idle-catalog');

    await page.click('button.product[data-slot="A2"]');
    await waitForScreen(page, 'pay');
    await page.waitForSelector('#qr svg');
    const order = await currentOrder(svc);
    const shownQr = await page.locator('#qr svg').evaluate((svg) => svg.outerHTML);
    expect(decodeQrSvg(shownQr)).toBe(order.payUrl);
    expect(await page.textContent('#pay-amount')).toBe('₮2,500');
    expect(await page.textContent('#pay-item')).toBe('Cola 0.33 l');
    expect(await page.textContent('#pay-apps')).toBe('Demo: your phone camera opens the test page');
    expect(await page.textContent('#countdown')).toMatch(/^Time left [12]:\d\d$/);
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '02-awaiting-payment');

    const { paidAt } = await payOnPhone(order.payUrl);
    await waitForScreen(page, 'done', 2_000);
    expect(Date.now() - paidAt).toBeLessThan(2_000);
    expect(await page.textContent('#done-text')).toBe('Please take your item');
    await screenshot(page, '05-take-your-item');
    expect(readSimLog(dir.path).filter((line) => line.orderId === order.orderId)).toHaveLength(1);
    expect(readSimLog(dir.path)).toHaveLength(1);

    await waitForScreen(page, 'catalog', 30_000);
    expect(readSimLog(dir.path)).toHaveLength(1);
  });

  it('returns to idle when the QR expires unpaid', async () => {
    const { first: svc } = await service({ provider: { name: 'sandbox', invoiceTtlSec: 30 } });
    const page = await kioskPage(svc.url);
    await waitForScreen(page, 'catalog');
    await page.click('button.product[data-slot="A1"]');
    await waitForScreen(page, 'pay');
    await waitFor(async () => (await page.textContent('#countdown'))?.startsWith('Time left 0:0'), {
      timeoutMs: 30_000,
      what: 'the last seconds',
    });
    await screenshot(page, '03-countdown-ending');
    await waitForScreen(page, 'catalog', 30_000);
    const state = await (await fetch(`${svc.url}/api/state`)).json();
    expect(['idle', 'expired']).toContain(state.phase);
  });

  it('tells the customer the money is being refunded when the vend fails', async () => {
    const { dir, first: svc } = await service((path) => ({
      actuator: { kind: 'sim', sim: { logPath: `${path}/actuations.jsonl`, durationMs: 20, failMode: 'fail' } },
    }));
    const page = await kioskPage(svc.url);
    await waitForScreen(page, 'catalog');
    await page.click('button.product[data-slot="A1"]');
    await waitForScreen(page, 'pay');
    await payOnPhone((await currentOrder(svc)).payUrl);
    await waitForScreen(page, 'refund', 30_000);
    expect(await page.textContent('#screen-refund .big')).toBe('Your money is being refunded');
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '06-refund');
    expect(readSimLog(dir.path)).toHaveLength(0);
  });

  it('recovers by itself when the service is killed and restarted while the page is open', async () => {
    const port = await freePort();
    const svc = await service({}, port);
    const page = await kioskPage(svc.first.url);
    await waitForScreen(page, 'catalog');
    await svc.first.kill('SIGKILL');
    await page.waitForSelector('#banner:not([hidden])', { timeout: 10_000 });
    await screenshot(page, '07-reconnecting');
    const second = await svc.start();
    expect(second.url).toBe(svc.first.url);
    await page.waitForSelector('#banner[hidden]', { state: 'attached', timeout: 15_000 });
    await waitForScreen(page, 'catalog');
    // Live again: an order can be started and canceled from the page.
    await page.click('button.product[data-slot="B1"]');
    await waitForScreen(page, 'pay');
    const order = await currentOrder(second);
    await page.click('#cancel');
    await waitForScreen(page, 'catalog');
    expect((await (await fetch(`${second.url}/api/orders/${order.orderId}`)).json()).state).toBe('canceled');
  });
});

describe('kiosk page: languages, turnstile, large screen', () => {
  it('switches language on screen and back to the default when the customer is done', async () => {
    const { first: svc } = await service({ kiosk: { language: 'mn' } });
    const page = await kioskPage(svc.url);
    await waitForScreen(page, 'catalog');
    await page.waitForSelector('h1:has-text("Бүтээгдэхүүнээ сонгоно уу")');
    expect(await page.getAttribute('html', 'lang')).toBe('mn');
    await screenshot(page, '08-catalog-mn');
    for (const [lang, heading] of [
      ['kk', 'Тауарды таңдаңыз'],
      ['ru', 'Выберите товар'],
      ['en', 'Choose a product'],
    ]) {
      await page.click(`.langs button[data-lang="${lang}"]`);
      await page.waitForSelector(`h1:has-text("${heading}")`);
      expect(await layoutProblems(page)).toEqual([]);
    }
    await page.click('.langs button[data-lang="kk"]');
    await page.click('button.product[data-slot="A1"]');
    await waitForScreen(page, 'pay');
    expect(await page.textContent('#countdown')).toMatch(/^Қалған уақыт/);
    await screenshot(page, '09-pay-kk');
    await page.click('#cancel');
    await page.waitForSelector('h1:has-text("Бүтээгдэхүүнээ сонгоно уу")');
  });

  it('turnstile with autoStart shows a standing QR that renews itself before it expires', async () => {
    const { first: svc } = await service({
      device: { id: 'gate-e2e', mode: 'turnstile', currency: 'KZT', fare: 200 },
      provider: { name: 'sandbox', invoiceTtlSec: 30 },
      kiosk: { language: 'en', autoStart: true },
    });
    const page = await kioskPage(svc.url);
    await waitForScreen(page, 'pay');
    const firstOrder = await currentOrder(svc);
    expect(await page.textContent('#pay-amount')).toBe('₸200');
    expect(await page.isHidden('#cancel')).toBe(true);
    await screenshot(page, '10-turnstile-standing-qr');
    await waitFor(
      async () => {
        const order = await currentOrder(svc);
        return order && order.orderId !== firstOrder.orderId;
      },
      { what: 'a renewed QR' },
    );
    const renewed = await currentOrder(svc);
    await waitFor(async () => decodeQrSvg(await page.locator('#qr svg').evaluate((svg) => svg.outerHTML)) === renewed.payUrl, {
      timeoutMs: 30_000,
      what: 'the new QR on screen',
    });
    const old = await (await fetch(`${svc.url}/api/orders/${firstOrder.orderId}`)).json();
    expect(old.state).toBe('canceled');

    const { paidAt } = await payOnPhone(renewed.payUrl);
    await waitForScreen(page, 'done', 2_000);
    expect(Date.now() - paidAt).toBeLessThan(2_000);
    expect(await page.textContent('#done-text')).toBe('Please pass');
    await screenshot(page, '11-turnstile-please-pass');
  });

  it('lays out every screen at 1920×1080', async () => {
    const { first: svc } = await service();
    const page = await kioskPage(svc.url, { width: 1920, height: 1080 });
    await waitForScreen(page, 'catalog');
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '12-catalog-1080p');
    await page.click('button.product[data-slot="A1"]');
    await waitForScreen(page, 'pay');
    await page.waitForSelector('#qr svg');
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '13-pay-1080p');
  });
});
