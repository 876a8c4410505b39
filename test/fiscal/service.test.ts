import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';

/** The compiled service with the demo's register: a paid vend shows its receipt QR and /metrics counts it. */
describe('fiscal receipts in the running service', () => {
  let svc: Service | null = null;
  afterEach(async () => {
    await svc?.stop();
    svc = null;
  });

  const post = (url: string, body?: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });

  it('the sandbox register issues one receipt for a vend: QR on the result screen, counted in /metrics, nothing of it stored', async () => {
    svc = await startService({ config: { fiscal: { register: 'sandbox' }, kiosk: { resultScreenSec: 60 } } });
    const created = (await (await post(`${svc.localUrl}/api/orders`, { slot: 'A1' })).json()) as { orderId: number; invoiceId: string };
    expect((await post(`${svc.localUrl}/sandbox/pay/${created.invoiceId}`)).status).toBe(204);
    const state = await svc.waitFor(
      async () => {
        const body = (await (await fetch(`${svc!.localUrl}/api/state`)).json()) as {
          phase: string;
          receipt: { status: string; qrData: string | null } | null;
          receiptQrSvg: string | null;
        };
        return body.phase === 'vended' && body.receipt?.status === 'issued' ? body : null;
      },
      30_000,
      'the result screen with an issued receipt',
    );
    expect(state.receiptQrSvg).toMatch(/^<svg/);
    const metrics = await (await fetch(`${svc.localUrl}/metrics`)).text();
    expect(metrics).toMatch(/^vendgate_receipts_total\{kind="sale"\} 1$/m);
    expect(metrics).toMatch(/^vendgate_receipts_pending 0$/m);

    const db = new Database(svc.dbPath, { readonly: true });
    const rows = db.prepare('SELECT kind, state, register_id, request_json FROM receipts').all() as Record<string, string>[];
    db.close();
    expect(rows).toEqual([expect.objectContaining({ kind: 'sale', state: 'issued', register_id: expect.stringMatching(/^SBX/) })]);
    expect(JSON.stringify(rows)).not.toContain(state.receipt!.qrData!);
    const register = new Database(join(svc.dir, 'fiscal-sandbox.db'), { readonly: true });
    expect(register.prepare('SELECT count(*) AS n FROM sandbox_receipts').get()).toEqual({ n: 1 });
    register.close();
  });
});
