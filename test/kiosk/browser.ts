import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { createKioskServer } from '../../src/kiosk/index.js';
import { stop, type Defer } from '../helpers/cleanup.js';
import type { FakeKioskDeps } from '../fakes/kiosk-deps.js';

/** Debian's chromium; never a downloaded browser. */
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const SCREENSHOTS = new URL('../../artifacts/screenshots/', import.meta.url).pathname;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-quic',
      '--disable-sync',
    ],
  });
}

/** One Chromium for the calling file: launched before its first test, closed after its last. */
export function chromiumForFile(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error('chromiumForFile: the browser is not launched yet (use it inside a test)');
    return browser;
  };
}

/** A new page in its own context (at 800×480, the machine's screen, unless `context` says otherwise) on `url`. */
export async function pageOn(browser: Browser, url: string, context: BrowserContextOptions = {}): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 800, height: 480 }, ...context })).newPage();
  await page.goto(url);
  return page;
}

/** The kiosk server on a loopback port over fake order-service deps, stopped after the test, and a page on it. */
export async function fakeKioskPage(
  browser: Browser,
  defer: Defer,
  deps: FakeKioskDeps,
  context: BrowserContextOptions = {},
): Promise<Page> {
  const server = defer(createKioskServer(deps, { host: '127.0.0.1', port: 0 }), stop);
  const { url } = await server.start();
  return pageOn(browser, url, context);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png` });
}

/** Waits for the kiosk to show a screen (body[data-screen]). */
export async function waitForScreen(page: Page, screen: string, timeoutMs = 30_000): Promise<void> {
  await page.waitForSelector(`body[data-screen="${screen}"]`, { timeout: timeoutMs });
}

/** A port for a service that must come back on the same address after a restart (reserved: see freePort). */
export { freePort } from '../helpers/service.js';

/** The page must fit the screen and be readable: nothing wider than the viewport, no text under 24 px, contrast at least 4.5:1 (AA). */
export async function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const rgb = (css: string) => (css.match(/[\d.]+/g) ?? []).map(Number);
    const luminance = (css: string) => {
      const [r, g, b] = rgb(css)
        .map((v) => v / 255)
        .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const contrast = (a: string, b: string) => {
      const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
      return (x! + 0.05) / (y! + 0.05);
    };
    // The first ancestor with an opaque background is what the text is read against.
    const backgroundOf = (el: Element): string => {
      for (let node: Element | null = el; node; node = node.parentElement) {
        const background = getComputedStyle(node).backgroundColor;
        const alpha = rgb(background)[3];
        if (alpha === undefined || alpha > 0.5) return background;
      }
      return 'rgb(255, 255, 255)';
    };
    const problems: string[] = [];
    const width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > width)
      problems.push(`page scrolls sideways (${document.documentElement.scrollWidth} > ${width})`);
    for (const el of document.querySelectorAll<HTMLElement>('main *, header *, footer *')) {
      if (el.closest('[hidden]') || !el.textContent?.trim() || el.children.length > 0) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width === 0) continue;
      const size = parseFloat(getComputedStyle(el).fontSize);
      if (size < 24) problems.push(`"${el.textContent.trim().slice(0, 30)}" is ${size}px`);
      if (rect.right > width + 1) problems.push(`"${el.textContent.trim().slice(0, 30)}" overflows to ${Math.round(rect.right)}px`);
      if (el.closest('button:disabled')) continue;
      const ratio = contrast(getComputedStyle(el).color, backgroundOf(el));
      if (ratio < 4.5) problems.push(`"${el.textContent.trim().slice(0, 30)}" has contrast ${ratio.toFixed(1)}:1`);
    }
    return problems;
  });
}
