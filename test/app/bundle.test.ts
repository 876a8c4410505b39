import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';

/**
 * dist/vendgate.js (scripts/bundle.mjs) is what the systemd units and the installed `vendgate`
 * command start; the rest of the suite runs dist/main.js. These tests run the bundle itself: the
 * files it finds by path (migrations, the kiosk page, the sandbox's assets, package.json, the build
 * info) are found from one file, and an order goes from QR to vend through it.
 */
const BUNDLE = new URL('../../dist/vendgate.js', import.meta.url).pathname;
const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

let svc: Service | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
});

describe('dist/vendgate.js, the one-file build', () => {
  it('is built with the rest of dist/ and names the same version and commit as dist/main.js', () => {
    const version = (entry: string) => execFileSync(process.execPath, [entry, '--version'], { encoding: 'utf8' });
    expect(version(BUNDLE)).toBe(version(MAIN));
    // A copy of the tree without .git (CI's Node 22 and 24 runs) says "commit unknown", a dirty
    // tree "<commit>-dirty": whatever it is, both entries say the same.
    expect(version(BUNDLE)).toMatch(/^vendgate \d+\.\d+\.\d+ \(commit \S+, node v\d+/);
  });

  it('creates its database, serves the kiosk page and the sandbox, and vends a paid order once', async () => {
    svc = await startService({ main: BUNDLE });
    const page = await fetch(`${svc.localUrl}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
    expect((await fetch(`${svc.localUrl}/sandbox/assets/pay.js`)).status).toBe(200);

    const created = await fetch(`${svc.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: 'A1' }),
    });
    expect(created.status).toBe(201);
    const order = (await created.json()) as { orderId: number; invoiceId: string };
    expect((await fetch(`${svc.localUrl}/sandbox/pay/${order.invoiceId}`, { method: 'POST' })).status).toBe(204);
    await svc.waitFor(
      async () => ((await (await fetch(`${svc!.localUrl}/api/orders/${order.orderId}`)).json()) as { state: string }).state === 'vended',
      30_000,
      'the order to be vended',
    );
    expect(svc.readSimLog()).toEqual([expect.objectContaining({ orderId: order.orderId, slot: 'A1' })]);
  });
});
