import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { cleanup } from '../../helpers/cleanup.js';
import { createFakeKioskDeps, type FakeKioskDeps } from '../../fakes/kiosk-deps.js';
import { ErrorCodes, VendgateError, type ErrorCode } from '../../../src/util/index.js';
import { chromiumForFile, fakeKioskPage, layoutProblems, screenshot, waitForScreen } from '../../kiosk/browser.js';

/**
 * Every screen of the page in Chromium at 800×480, driven by a fake order service: the states the
 * real service reaches only through faults (offline, out of service, uncertain vend, provider down).
 */
const chromium = chromiumForFile();
const defer = cleanup();

const open = (deps: FakeKioskDeps): Promise<Page> => fakeKioskPage(chromium(), defer, deps);

/** The kiosk page on `deps`, once it shows the catalog. */
async function onCatalog(deps = createFakeKioskDeps()) {
  const page = await open(deps);
  await waitForScreen(page, 'catalog');
  return { deps, page };
}

/** A tap on `slot` whose order the service refuses with `code`: the page on the error screen, and the refusing deps with their working createImpl. */
async function failedOrder(slot: string, code: ErrorCode, message: string) {
  const deps = createFakeKioskDeps();
  const working = deps.createImpl;
  deps.createImpl = async () => {
    throw new VendgateError(code, message);
  };
  const { page } = await onCatalog(deps);
  await page.click(`button.product[data-slot="${slot}"]`);
  await waitForScreen(page, 'error');
  return { deps, page, working };
}

async function showOrder(deps: FakeKioskDeps, phase: Parameters<FakeKioskDeps['setState']>[0]['phase'], reference?: string) {
  const created = await deps.createImpl({ slot: 'A1', source: 'kiosk' });
  const order = { ...deps.orderTable.get(created.orderId)!, ...(reference ? { reference } : {}) };
  deps.setState({ phase, order });
  return order;
}

describe('kiosk screens (fake order service, Chromium 800×480)', () => {
  it('shows payment received while paid and vending, then "take your item", then idle on its own', async () => {
    const { deps, page } = await onCatalog();
    await showOrder(deps, 'paid');
    await waitForScreen(page, 'progress');
    expect(await page.textContent('#progress-text')).toBe('Your item is on its way…');
    await screenshot(page, '20-paid-dispensing');
    deps.setState({ phase: 'vended', resultScreenSec: 1 });
    await waitForScreen(page, 'done');
    // No further push: the page leaves the result screen after resultScreenSec by itself.
    await waitForScreen(page, 'catalog', 3_000);
  });

  it('shows the fiscal receipt\'s QR and lottery number under "take your item", or says the receipt follows', async () => {
    const { deps, page } = await onCatalog();
    await showOrder(deps, 'vended');
    deps.setState({ phase: 'vended', resultScreenSec: 60, receipt: { status: 'pending', qrData: null, lottery: null } });
    await waitForScreen(page, 'done');
    await page.waitForFunction(() => !document.getElementById('receipt')!.hidden);
    expect(await page.textContent('#receipt-text')).toBe('Your receipt follows: it is being issued');
    expect(await page.isVisible('#receipt-qr')).toBe(false);
    deps.setState({
      phase: 'vended',
      resultScreenSec: 60,
      receipt: { status: 'issued', qrData: 'SANDBOX-FISCAL|SBX1|1500', lottery: 'AB 12345678' },
    });
    await page.waitForSelector('#receipt-qr svg');
    expect(await page.textContent('#receipt-text')).toBe('Your receipt: scan the code');
    expect(await page.textContent('#receipt-lottery')).toBe('Lottery number: AB 12345678');
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '20b-done-with-receipt');
  });

  it('asks for the operator with the device id and order reference, escaped, when a vend is uncertain', async () => {
    const { deps, page } = await onCatalog();
    await showOrder(deps, 'vend_uncertain', 'vm-test-1-<b>7</b>');
    await waitForScreen(page, 'operator');
    expect(await page.textContent('#screen-operator .big')).toBe('Please contact the operator');
    expect(await page.textContent('#operator-device')).toBe('Machine: vm-test-1');
    expect(await page.textContent('#operator-order')).toBe('Order: vm-test-1-<b>7</b>');
    expect(await page.locator('#operator-order b').count()).toBe(0);
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '21-operator-vend-uncertain');
  });

  it.each([['offline'], ['out_of_service']] as const)('asks for the operator when the device is %s', async (phase) => {
    const { deps, page } = await onCatalog();
    deps.setState({ phase, reason: 'payment service unreachable: ECONNREFUSED 10.0.0.1:443' });
    await waitForScreen(page, 'operator');
    expect(await page.textContent('#operator-device')).toBe('Machine: vm-test-1');
    expect(await page.textContent('#operator-order')).toBe('');
    expect(await page.textContent('body')).not.toContain('ECONNREFUSED');
    await screenshot(page, `22-operator-${phase}`);
  });

  it('shows a friendly message, never the raw error, when the provider is down, and retries on request', async () => {
    const { deps, page, working } = await failedOrder('A2', ErrorCodes.PROVIDER_UNAVAILABLE, 'POST /payment-intents: 503 after 4 attempts');
    expect(await page.textContent('#error-text')).toBe('Payment is not available right now. Please try again.');
    expect(await page.textContent('body')).not.toContain('payment-intents');
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '23-error-provider-down');
    deps.createImpl = working;
    await page.click('#error-retry');
    await waitForScreen(page, 'pay');
    expect(deps.calls.create.map((c) => c.slot)).toEqual(['A2', 'A2']);
  });

  it('says the machine is busy when another order is open', async () => {
    const { page } = await failedOrder('A1', ErrorCodes.DEVICE_BUSY, 'order 3 is open');
    expect(await page.textContent('#error-text')).toBe('The machine is busy. Please wait a moment.');
    await page.click('#error-back');
    await waitForScreen(page, 'catalog');
  });

  it('counts down by the server clock, not the browser clock', async () => {
    const deps = createFakeKioskDeps();
    // The fake server clock is far from the browser's; the order expires 120 s after server time.
    deps.clock.set(Date.now() - 3 * 3_600_000);
    const page = await open(deps);
    await waitForScreen(page, 'catalog');
    await page.click('button.product[data-slot="A1"]');
    await waitForScreen(page, 'pay');
    expect(await page.textContent('#countdown')).toMatch(/^Time left (2:00|1:5\d)$/);
  });

  it('shows the refund message for refunding and refunded orders', async () => {
    const { deps, page } = await onCatalog();
    await showOrder(deps, 'refunding');
    await waitForScreen(page, 'refund');
    deps.setState({ phase: 'refunded' });
    await page.waitForFunction(() => document.body.dataset.phase === 'refunded');
    expect(await page.getAttribute('body', 'data-screen')).toBe('refund');
  });

  it('turnstile without autoStart shows the fare and a "pay to enter" button', async () => {
    const deps = createFakeKioskDeps({ mode: 'turnstile' });
    const page = await open(deps);
    await waitForScreen(page, 'fare');
    expect(await page.textContent('#fare-amount')).toBe('₮1,500');
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, '24-turnstile-fare');
    await page.click('#pay-to-enter');
    await waitForScreen(page, 'pay');
    expect(deps.calls.create).toEqual([{ source: 'kiosk' }]);
    expect(await page.textContent('#pay-item')).toBe('One entry');
  });
});
