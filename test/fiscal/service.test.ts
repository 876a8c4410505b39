import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WEBKASSA_SIM_DEFAULTS as D } from '../../src/simulator/index.js';
import { postJson, startService } from '../helpers/service.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { startRegisters } from '../techniques/contract/register-harness.js';

/** The compiled service with the demo's register: a paid vend shows its receipt QR and /metrics counts it. */
describe('fiscal receipts in the running service', () => {
  const defer = cleanup();
  const post = postJson;

  it('the sandbox register issues one receipt for a vend: QR on the result screen, counted in /metrics, nothing of it stored', async () => {
    const svc = defer(await startService({ config: { fiscal: { register: 'sandbox' }, kiosk: { resultScreenSec: 60 } } }), stop);
    const created = (await (await post(`${svc.localUrl}/api/orders`, { slot: 'A1' })).json()) as { orderId: number; invoiceId: string };
    expect((await post(`${svc.localUrl}/sandbox/pay/${created.invoiceId}`)).status).toBe(204);
    const state = await svc.waitFor(
      async () => {
        const body = (await (await fetch(`${svc.localUrl}/api/state`)).json()) as {
          phase: string;
          receipt: { status: string; qrData: string | null } | null;
          receiptQrSvg: string | null;
        };
        return body.phase === 'vended' && body.receipt?.status === 'issued' ? body : null;
      },
      { what: 'the result screen with an issued receipt' },
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

  /** A gauge's value in a /metrics text (a family without labels). */
  const gauge = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

  it('a register that goes down (connection refused): /metrics says so and ages the waiting receipt, fiscal.stopSalesAfterHours stops sales in /healthz and refuses orders; all of it ends when the register is back', async () => {
    const sim = await startRegisters();
    const port = Number(new URL(sim.url).port);
    const svc = defer(
      await startService({
        config: {
          fiscal: {
            register: 'webkassa',
            webkassa: { url: sim.url, login: D.login, cashboxId: D.cashbox.uniqueNumber },
            intervalMs: 100,
            retryMaxMs: 200,
            // 3.6 s: long enough for the sale to settle first, short enough for a test on the real clock.
            stopSalesAfterHours: 0.001,
          },
        },
        env: { VENDGATE_FISCAL_WEBKASSA_PASSWORD: D.password, VENDGATE_FISCAL_WEBKASSA_API_KEY: D.apiKey },
      }),
      stop,
    );
    const metrics = async () => (await fetch(`${svc.localUrl}/metrics`)).text();
    const healthz = async () => {
      const r = await fetch(`${svc.localUrl}/healthz`);
      return { status: r.status, body: (await r.json()) as { ok: boolean; checks: Record<string, { ok: boolean; detail: string }> } };
    };
    expect(gauge(await metrics(), 'vendgate_fiscal_register_up')).toBe(1);
    expect(gauge(await metrics(), 'vendgate_receipts_oldest_pending_age_seconds')).toBe(0);

    // Down: nothing listens at the register's address (connection refused).
    await sim.stop();
    const created = (await (await post(`${svc.localUrl}/api/orders`, { slot: 'A1' })).json()) as { orderId: number; invoiceId: string };
    expect((await post(`${svc.localUrl}/sandbox/pay/${created.invoiceId}`)).status).toBe(204);
    // The receipt call fails: the register is down and the receipt waits, older each second.
    const down = await svc.waitFor(
      async () => {
        const text = await metrics();
        return gauge(text, 'vendgate_fiscal_register_up') === 0 &&
          gauge(text, 'vendgate_receipts_pending') === 1 &&
          gauge(text, 'vendgate_receipts_oldest_pending_age_seconds') >= 2
          ? text
          : null;
      },
      { what: 'register_up 0 and a receipt waiting 2 s' },
    );
    expect(down).toMatch(/^vendgate_receipts_total\{kind="sale"\} 0$/m);
    // Past stopSalesAfterHours: /healthz fails on the fiscal reason and a new order is refused.
    const stopped = await svc.waitFor(
      async () => {
        const h = await healthz();
        return h.status === 503 && /fiscal/.test(h.body.checks.service?.detail ?? '') ? h : null;
      },
      { what: '/healthz naming the fiscal stop' },
    );
    expect(stopped.body.checks.service).toMatchObject({ ok: false, detail: expect.stringContaining('fiscal.stopSalesAfterHours: 0.001') });
    const refused = await post(`${svc.localUrl}/api/orders`, { slot: 'A1' });
    expect(refused.status).toBe(503);
    expect(JSON.stringify(await refused.json())).toContain('VG_ERR_OUT_OF_SERVICE');

    // The register is back at the same address: the receipt goes, the gauges return, sales reopen.
    const back = await startRegisters({ port });
    await svc.waitFor(
      async () => {
        const text = await metrics();
        const h = await healthz();
        return gauge(text, 'vendgate_fiscal_register_up') === 1 &&
          gauge(text, 'vendgate_receipts_pending') === 0 &&
          gauge(text, 'vendgate_receipts_oldest_pending_age_seconds') === 0 &&
          h.status === 200
          ? true
          : null;
      },
      { what: 'register_up 1, nothing waiting, /healthz 200' },
    );
    expect(await metrics()).toMatch(/^vendgate_receipts_total\{kind="sale"\} 1$/m);
    expect(back.registers.webkassa.records().cashboxes[0]!.checks).toHaveLength(1);
    expect((await post(`${svc.localUrl}/api/orders`, { slot: 'A1' })).status).toBe(201);
  });
});
