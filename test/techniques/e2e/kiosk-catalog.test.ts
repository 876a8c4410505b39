import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startService } from '../../helpers/service.js';
import { cleanup, stop } from '../../helpers/cleanup.js';
import { chromiumForFile, pageOn, screenshot, waitForScreen } from '../../kiosk/browser.js';
import { cli, order, post } from '../../catalog/helpers.js';

/**
 * The customer's page in Chromium against the real compiled service: products named in the page's
 * language, sold-out and jammed slots not offered, and back on the screen after a refill.
 */
const chromium = chromiumForFile();
const defer = cleanup();

const CATALOG = [
  { slot: 'A1', name: 'Water', names: { mn: 'Ус', ru: 'Вода' }, price: 1500 },
  { slot: 'A2', name: 'Cola', names: { mn: 'Кола' }, price: 2500 },
  { slot: 'B1', name: 'Crisps', price: 2000 },
];

async function open(url: string): Promise<Page> {
  const page = await pageOn(chromium(), url);
  await waitForScreen(page, 'catalog');
  return page;
}

const offeredNames = (page: Page) => page.locator('#catalog .product .name').allTextContents();
// Functions, not strings: the page's CSP forbids eval. (DOM types: this file is excluded from tsconfig.test.json.)
const productCount = async (page: Page, n: number, timeout = 10_000) =>
  page.waitForFunction((count) => document.querySelectorAll('#catalog .product').length === count, n, { timeout });
const offeredSlots = async (page: Page) =>
  Promise.all((await page.locator('#catalog .product').all()).map((button) => button.getAttribute('data-slot')));

describe('kiosk catalog (real service, Chromium 800×480)', () => {
  it('names products in the page language (falling back to the default name) and hides a sold-out slot until it is refilled', async () => {
    const svc = defer(await startService({ config: { device: { catalog: CATALOG }, kiosk: { language: 'mn' } } }), stop);
    const page = await open(svc.localUrl);
    await productCount(page, 3);
    expect(await offeredNames(page)).toEqual(['Ус', 'Кола', 'Crisps']);

    expect((await post(`${svc.localUrl}/api/slots/A2/refill`, { count: 0 })).status).toBe(200);
    await productCount(page, 2);
    expect(await offeredSlots(page)).toEqual(['A1', 'B1']);
    await screenshot(page, '60-catalog-sold-out-hidden');
    // The API refuses what the page no longer offers.
    expect((await order(svc, 'A2')).body.error.code).toBe('VG_ERR_SOLD_OUT');

    // A refill by the technician on the command line (another process) reaches the open page.
    expect((await cli(svc, ['refill', 'A2', '4'])).code).toBe(0);
    await productCount(page, 3);

    // The customer switches the language: the names follow.
    await page.click('[data-lang="ru"]');
    await page.waitForFunction(() => document.querySelector('#catalog .product .name')?.textContent === 'Вода');
    expect(await offeredNames(page)).toEqual(['Вода', 'Cola', 'Crisps']);

    // The pay screen names the product in the page language too.
    await page.click('[data-slot="A1"]');
    await waitForScreen(page, 'pay');
    expect(await page.textContent('#pay-item')).toBe('Вода');
  });
});
