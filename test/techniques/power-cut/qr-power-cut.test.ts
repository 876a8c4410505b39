import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startProviderStack, type ProviderStack } from '../chaos/stack.js';
import { mountPowerCutFs, type PowerCutFs } from '../../helpers/power-cut-fs.js';
import { cleanup, stop } from '../../helpers/cleanup.js';

/**
 * A real power cut right after the QR was shown, on a file system that loses every write not yet
 * synced (test/techniques/power-cut/power-cut-fs.c). The real service against each provider's simulator
 * (QPay's create is not idempotent at the server, so its cut is the sharpest);
 * its database on the power-cut mount (its config and the sim actuator's log, the physical truth,
 * are not: a cut does not undo a delivery). The customer's money must end vended, exactly once —
 * not taken for a foreign invoice (invoice_reused, a `-pay-2` invoice, the order canceled).
 */

const defer = cleanup();

type Provider = 'gerege' | 'qutpay' | 'qpay' | 'kaspi';

async function start(provider: Provider): Promise<{ fs: PowerCutFs; stack: ProviderStack; db: string }> {
  const fs = defer(await mountPowerCutFs(), (mounted) => mounted.unmount());
  const db = join(fs.path, 'vendgate.db');
  const config = { device: { id: `pcut-${process.pid}` }, storage: { path: db } };
  const stack = defer(await startProviderStack({ provider, readyTimeoutMs: 60_000, config }), stop);
  return { fs, stack, db };
}

function query(db: string, sql: string): Record<string, any>[] {
  const conn = new Database(db, { readonly: true });
  try {
    return conn.prepare(sql).all() as Record<string, any>[];
  } finally {
    conn.close();
  }
}

async function pay(s: ProviderStack, invoiceId: string): Promise<void> {
  const answer = await fetch(`${s.sim.url}/__sim/pay/${invoiceId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  expect(answer.status).toBeLessThan(300);
}

/** The order ends vended once, under its first key, with no alarm that it was somebody else's. */
async function expectVendedOnce(s: ProviderStack, db: string, orderId: number): Promise<void> {
  const settled = await s.waitSettled(orderId, 60_000);
  const detail = {
    history: query(db, `SELECT from_state, to_state, reason FROM order_history WHERE order_id = ${orderId} ORDER BY rowid`),
    alarms: query(db, 'SELECT name, message FROM alarms'),
    keys: s.sim.records().createCalls.map((c) => c.idempotencyKey),
  };
  expect(settled.state, JSON.stringify(detail, null, 1)).toBe('vended');
  expect(s.actuationsByOrder().get(orderId)).toBe(1);
  expect(detail.keys.filter((k) => k?.endsWith('-pay-2'))).toEqual([]);
  expect(detail.alarms.filter((a) => String(a.name).startsWith('invoice_reused'))).toEqual([]);
  expect(query(db, 'SELECT count(*) AS n FROM refunds')[0]!.n).toBe(0);
}

// Kaspi QR: no webhooks, the QR is read through the fleet relay's Kaspi caller (its journal on the relay's disk, not the cut one).
describe.each(['gerege', 'qutpay', 'qpay', 'kaspi'] as const)('%s: a power cut right after the QR was shown', (provider) => {
  it('the customer pays while the power is off: after the restart the payment is vended, once', async () => {
    const { fs, stack: s, db } = await start(provider);
    const created = await s.call('POST', '/api/orders', { slot: 'A1' });
    expect(created.status).toBe(201);
    expect(created.json.payUrl).toBeTruthy();

    await s.svc.kill('SIGKILL');
    await fs.cut();
    await pay(s, created.json.invoiceId);
    await s.svc.restart();

    await expectVendedOnce(s, db, created.json.orderId);
  });

  it('the customer pays right after the 201 and the power goes before the device saw it: vended once after the restart', async () => {
    const { fs, stack: s, db } = await start(provider);
    const created = await s.call('POST', '/api/orders', { slot: 'A1' });
    expect(created.status).toBe(201);
    // Frozen the moment the QR is out: the payment lands before the device can read or hear of it.
    process.kill(s.svc.pid!, 'SIGSTOP');
    await pay(s, created.json.invoiceId);
    await s.svc.kill('SIGKILL');
    await fs.cut();
    await s.svc.restart();

    await expectVendedOnce(s, db, created.json.orderId);
  });
});
