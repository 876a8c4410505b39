import { describe, expect, it } from 'vitest';
import { cleanup, stop } from '../helpers/cleanup.js';
import { startService } from '../helpers/service.js';
import { cli, get, offered, order, orderReaches, pay, post, query, slotState } from './helpers.js';

/** Stock you can trust, black-box: the compiled service, its local API and the CLI as separate processes. */
describe('stock per slot', () => {
  const defer = cleanup();

  it('goes down on a delivered vend only; the last one sells the slot out, which the API refuses and the screen stops offering; a refill brings it back', async () => {
    const svc = defer(await startService({ config: { slots: { lowStockAt: 1 } } }), stop);
    expect((await post(`${svc.localUrl}/api/slots/A1/refill`, { count: 2 })).body).toMatchObject({ slot: 'A1', stock: 2 });
    expect(await slotState(svc, 'A2')).toMatchObject({ stock: null, jammed: false });

    const first = await order(svc, 'A1');
    await pay(first.body.payUrl);
    await orderReaches(svc, first.body.orderId, 'vended');
    expect(await slotState(svc, 'A1')).toMatchObject({ stock: 1 });
    expect(query(svc, 'SELECT name FROM alarms').map((a) => a.name)).toContain('stock_low/A1');

    const last = await order(svc, 'A1');
    await pay(last.body.payUrl);
    await orderReaches(svc, last.body.orderId, 'vended');
    expect(await slotState(svc, 'A1')).toMatchObject({ stock: 0 });
    expect(await offered(svc, 'A1')).toMatchObject({ available: false, unavailable: 'sold_out' });

    const refused = await order(svc, 'A1');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'VG_ERR_SOLD_OUT' });
    expect(refused.body.error.message).toMatch(/slot A1 is sold out/);
    // Refused means nothing written: still exactly the two orders.
    expect(query(svc, 'SELECT count(*) AS n FROM orders')[0].n).toBe(2);
    // A slot that is not counted keeps selling.
    expect((await order(svc, 'A2')).status).toBe(201);

    const refill = await cli(svc, ['refill', 'A1', '5']);
    expect(refill).toMatchObject({ code: 0 });
    expect(refill.stdout).toMatch(/A1 now holds 5/);
    await svc.waitFor(async () => (await offered(svc, 'A1')).available, { what: 'A1 offered again' });
    expect(query(svc, 'SELECT name FROM alarms').map((a) => a.name)).not.toContain('stock_low/A1');
    expect((await order(svc, 'A1')).status).toBe(201);
  });

  it('a failed vend leaves the stock as it was', async () => {
    const svc = defer(await startService({ config: { actuator: { kind: 'sim', sim: { durationMs: 20, failMode: 'fail' } } } }), stop);
    await post(`${svc.localUrl}/api/slots/A2/refill`, { count: 3 });
    const created = await order(svc, 'A2');
    await pay(created.body.payUrl);
    await orderReaches(svc, created.body.orderId, 'refunded');
    expect(await slotState(svc, 'A2')).toMatchObject({ stock: 3, consecutiveFailures: 1 });
  });

  it('a bad refill gets a clear 400 and changes nothing', async () => {
    const svc = defer(await startService(), stop);
    await post(`${svc.localUrl}/api/slots/A1/refill`, { count: 4 });
    const before = query(svc, 'SELECT * FROM slot_state');
    const bad: [string, unknown, RegExp][] = [
      ['A1', { count: -1 }, /count must be a whole number/],
      ['A1', { count: 2.5 }, /count must be a whole number/],
      ['A1', { count: '3' }, /count must be a whole number/],
      ['A1', { count: 3, extra: true }, /unknown field "extra"/],
      ['A1', [3], /JSON object/],
      ['Z9', { count: 3 }, /unknown slot "Z9"/],
      ['A1%20x', { count: 3 }, /the slot must be a catalog slot/],
    ];
    for (const [slot, body, message] of bad) {
      const answer = await post(`${svc.localUrl}/api/slots/${slot}/refill`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.message).toMatch(message);
    }
    expect(query(svc, 'SELECT * FROM slot_state')).toEqual(before);
    const usage = await cli(svc, ['refill', 'A1', 'many']);
    expect(usage.code).toBe(64);
    expect(usage.stderr).toMatch(/usage: vendgate refill SLOT COUNT/);
    expect(query(svc, 'SELECT * FROM slot_state')).toEqual(before);
  });
});

describe('vendgate catalog --apply on site', () => {
  const defer = cleanup();

  it('applies a YAML document, refuses a broken one with every problem and exit 1, and the service prices from it', async () => {
    const svc = defer(await startService(), stop);
    const { writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const good = join(svc.dir, 'catalog.yaml');
    writeFileSync(good, 'version: site-1\nitems:\n  - { slot: A1, name: Water, names: { kk: Су }, price: 1700 }\n');
    const bad = join(svc.dir, 'broken.yaml');
    writeFileSync(bad, 'version: site-2\nitems:\n  - { slot: A1, name: Water, price: 0 }\n  - { slot: A1, name: "", price: 5 }\n');
    const refused = await cli(svc, ['catalog', '--apply', bad]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/VG_ERR_CATALOG_INVALID: catalog not applied, nothing changed: items\.0\.price: .*; items\.1\.name: /);
    const applied = await cli(svc, ['catalog', '--apply', good]);
    expect(applied).toMatchObject({ code: 0 });
    expect(applied.stdout).toMatch(/catalog site-1 applied \(was settings\)/);
    const created = await order(svc, 'A1');
    expect((await get(`${svc.localUrl}/api/orders/${created.body.orderId}`)).amount).toBe(1700);
    expect(query(svc, 'SELECT version FROM catalog_versions')).toEqual([{ version: 'site-1' }]);
  });
});
