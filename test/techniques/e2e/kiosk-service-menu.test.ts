import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { cleanup } from '../../helpers/cleanup.js';
import { chromiumForFile, pageOn, layoutProblems, screenshot, waitForScreen } from '../../kiosk/browser.js';
import { tempDir } from '../../helpers/temp.js';
import { startService, writeServiceConfig } from './kiosk-service.js';

/**
 * The technician's service menu on the real service (dist/main.js) in Chromium at 800×480: a long
 * press on the machine id opens the PIN prompt, the PIN opens the menu, and a refill there changes
 * the stock the menu shows.
 */
const PIN = '731904';
const chromium = chromiumForFile();
const defer = cleanup();

async function openKiosk(env: Record<string, string>): Promise<Page> {
  const dir = defer(tempDir(), (d) => d.cleanup());
  const service = defer(await startService(writeServiceConfig(dir.path), env), (s) => s.kill('SIGTERM'));
  const page = await pageOn(chromium(), service.url);
  await waitForScreen(page, 'catalog');
  return page;
}

/** Holds the machine id in the footer down until the service page has opened (the page's own 3-second timer). */
async function longPressMachineId(page: Page): Promise<void> {
  const box = (await page.locator('#help-device').boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  await page.waitForURL('**/service.html', { timeout: 15_000 });
  await page.mouse.up();
}

async function typePin(page: Page, pin: string): Promise<void> {
  for (const digit of pin) await page.click(`#keypad button[data-key="${digit}"]`);
  await page.click('#keypad button[data-key="OK"]');
}

const stockOf = (page: Page, slot: string) => page.textContent(`#slots tr[data-slot="${slot}"] .stock`);

describe('the service menu on the kiosk screen (real service, Chromium 800×480)', () => {
  it('a long press on the machine id asks for the PIN; the PIN opens the menu; a refill changes the stock shown', async () => {
    const page = await openKiosk({ VENDGATE_SERVICE_PIN: PIN });
    await longPressMachineId(page);
    await page.waitForSelector('#pin:not([hidden])');
    expect(await page.isVisible('#menu')).toBe(false);

    await typePin(page, '000000');
    await page.waitForFunction(() => document.getElementById('pin-error')!.textContent!.includes('wrong PIN'));
    expect(await page.isVisible('#menu')).toBe(false);

    await typePin(page, PIN);
    await page.waitForSelector('#menu:not([hidden])');
    expect(await page.textContent('#identity')).toContain('Device crash-test');
    expect(await page.textContent('#identity')).toContain('vendgate.db');
    expect(await stockOf(page, 'A1')).toBe('not counted');

    await page.fill('#slots tr[data-slot="A1"] input', '9');
    await page.click('#slots tr[data-slot="A1"] button[data-action="refill"]');
    await page.waitForFunction(() => document.querySelector('#slots tr[data-slot="A1"] .stock')?.textContent === '9 in stock');

    await page.locator('#slots').scrollIntoViewIfNeeded();
    await screenshot(page, '60b-service-menu-stock');

    await page.click('#run-selftest');
    await page.waitForSelector('#selftest li.status-PASS', { timeout: 60_000 });
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '60-service-menu');

    await page.click('#exit');
    await waitForScreen(page, 'catalog');
  });

  it('without a PIN set, the menu says it is off and how to turn it on', async () => {
    const page = await openKiosk({});
    await longPressMachineId(page);
    await page.waitForSelector('#off:not([hidden])');
    expect(await page.textContent('#off-text')).toContain('VENDGATE_SERVICE_PIN');
    expect(await page.isVisible('#pin')).toBe(false);
    await screenshot(page, '61-service-menu-off');
  });
});
