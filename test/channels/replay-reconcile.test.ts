import Database from 'better-sqlite3';
import { Writable } from 'node:stream';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, type CliIo } from '../../src/cli/index.js';
import { createSandboxProvider } from '../../src/payments/sandbox/index.js';
import { systemClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { startService, type Service } from '../helpers/service.js';
import { callJson } from '../helpers/json-http.js';

function cliIo() {
  const out: string[] = [];
  const err: string[] = [];
  const stream = (into: string[]) =>
    new Writable({
      write(chunk, _encoding, done) {
        into.push(chunk.toString());
        done();
      },
    });
  const io: CliIo = {
    stdout: stream(out),
    stderr: stream(err),
    env: {},
    stopSignal: new Promise(() => {}),
    notify: () => {},
    isTty: false,
  };
  return { io, stdout: () => out.join(''), stderr: () => err.join('') };
}

async function cli(svc: Service, ...args: string[]) {
  const { io, stdout, stderr } = cliIo();
  const code = await runCli([...args, '--config', svc.configPath], io);
  return { code, stdout: stdout(), stderr: stderr() };
}

let svc: Service | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
});

const post = (url: string, body: unknown = {}) => callJson(url, 'POST', body);

async function paidAndVended(s: Service): Promise<{ orderId: number; invoiceId: string }> {
  const created = await post(`${s.localUrl}/api/orders`, { slot: 'A1' });
  expect(created.status).toBe(201);
  expect((await post(`${s.localUrl}/sandbox/pay/${created.json.invoiceId}`)).status).toBe(204);
  await s.waitFor(
    async () =>
      ((await fetch(`${s.localUrl}/api/orders/${created.json.orderId}`).then((r) => r.json())) as { state: string }).state === 'vended',
    { timeoutMs: 10_000, what: 'the vend' },
  );
  await s.waitFor(() => count(s, 'SELECT count(*) AS n FROM webhook_events WHERE processed_at IS NOT NULL') >= 1, {
    timeoutMs: 10_000,
    what: 'the webhook to be processed',
  });
  return { orderId: created.json.orderId, invoiceId: created.json.invoiceId };
}

function count(s: Service, sql: string, ...params: unknown[]): number {
  const db = new Database(s.dbPath, { readonly: true });
  try {
    return (db.prepare(sql).get(...params) as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('vendgate replay', () => {
  it('re-runs stored webhook events through GET + observe and changes nothing that is already known', async () => {
    const s = (svc = await startService());
    await paidAndVended(s);
    const ledgerBefore = count(s, 'SELECT count(*) AS n FROM invoice_status_ledger');
    const result = await cli(s, 'replay');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(
      /^replayed 1 stored event\(s\) received since .*: 0 recorded, 1 already known, 0 ignored, 0 rejected, 0 failed\n$/,
    );
    expect(count(s, 'SELECT count(*) AS n FROM invoice_status_ledger')).toBe(ledgerBefore);
    expect(count(s, 'SELECT count(*) AS n FROM vend_jobs')).toBe(1);
    expect(s.readSimLog()).toHaveLength(1);
  });

  it('replays only what was received since --since, and refuses a time it cannot read', async () => {
    const s = (svc = await startService());
    await paidAndVended(s);
    const later = await cli(s, 'replay', '--since', new Date(Date.now() + 60_000).toISOString());
    expect(later.code).toBe(0);
    expect(later.stdout).toContain('replayed 0 stored event(s)');
    const bad = await cli(s, 'replay', '--since', 'yesterday');
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain('--since must be an ISO 8601 time');
  });
});

describe('vendgate reconcile', () => {
  it('finds nothing when every paid invoice was vended and every vend was paid', async () => {
    const s = (svc = await startService());
    await paidAndVended(s);
    const canceled = await post(`${s.localUrl}/api/orders`, { slot: 'A2' });
    expect((await post(`${s.localUrl}/api/orders/${canceled.json.orderId}/cancel`)).status).toBe(200);
    const result = await cli(s, 'reconcile');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('2 invoice(s) here');
    expect(result.stdout).toContain('nothing to reconcile');
  });

  it('lists a payment the device missed while it was down (exit 1), and nothing once the restarted service vended it', async () => {
    const s = (svc = await startService());
    const created = await post(`${s.localUrl}/api/orders`, { slot: 'A1' });
    await s.kill('SIGKILL');
    // The customer pays while the device is down (the sandbox is "the provider": its own file).
    const sandbox = createSandboxProvider(
      { clock: systemClock, logger: silentLogger() },
      {
        dbPath: join(dirname(s.dbPath), 'sandbox.db'),
        payUrl: () => '',
        webhookSecret: 'sandbox-webhook-secret',
      },
    );
    await sandbox.payments.pay(created.json.invoiceId);
    sandbox.close();

    const missed = await cli(s, 'reconcile', '--json');
    expect(missed.code).toBe(1);
    const report = JSON.parse(missed.stdout) as { findings: { kind: string; invoiceId: string; localState: string }[] };
    expect(report.findings).toEqual([
      expect.objectContaining({ kind: 'paid_not_vended', invoiceId: created.json.invoiceId, localState: 'awaiting_payment' }),
    ]);

    await s.restart();
    await s.waitFor(() => s.readSimLog().length === 1, { what: 'the vend after the restart' });
    await s.waitFor(() => count(s, "SELECT count(*) AS n FROM orders WHERE state = 'vended'") === 1, { what: 'the order to be vended' });
    expect((await cli(s, 'reconcile')).code).toBe(0);
  });

  it('lists a vend here without a paid invoice there, and a paid invoice of this device the database has no row for', async () => {
    const s = (svc = await startService());
    const vended = await paidAndVended(s);
    const unpaid = await post(`${s.localUrl}/api/orders`, { slot: 'A2' });
    await s.kill('SIGTERM');
    // A damaged or restored database: a vend recorded for an order nobody paid, and a paid invoice forgotten.
    const db = new Database(s.dbPath);
    db.prepare(
      "INSERT INTO vend_jobs (order_id, state, slot, created_at, finished_at, outcome) VALUES (?, 'done', 'A2', 0, 0, 'vended')",
    ).run(unpaid.json.orderId);
    db.prepare('DELETE FROM order_invoices WHERE invoice_id = ?').run(vended.invoiceId);
    db.close();

    const result = await cli(s, 'reconcile');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`VENDED_NOT_PAID\\s+${unpaid.json.invoiceId}`));
    expect(result.stdout).toMatch(new RegExp(`UNKNOWN_HERE\\s+${vended.invoiceId}`));
    expect(result.stdout).toContain('2 invoice(s) need attention');
  });
});
