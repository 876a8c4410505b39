import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { ProviderError } from '../../../src/payments/index.js';
import { startHarness, type Harness } from '../contract/provider-harness.js';
import { startProviderStack, type ProviderStack } from '../chaos/stack.js';
import { waitFor } from '../../helpers/wait.js';

/** What the device does with provider answers it cannot trust, and with calls that can never succeed. */

let harness: Harness | null = null;
let stack: ProviderStack | null = null;
afterEach(async () => {
  await harness?.stop();
  await stack?.stop();
  harness = null;
  stack = null;
});

const request = (n: number, currency = 'MNT') => ({
  idempotencyKey: `vm-001-abc-${n}-pay`,
  reference: `vm-001-abc-${n}`,
  amount: 1500,
  currency,
  description: 'Cola',
  expiresInSec: 120,
  captureMode: 'automatic' as const,
});

/** Reading invoice `id` fails as a malformed answer that names it. */
async function expectMalformedRead(h: Harness, id: string): Promise<void> {
  const error = await h.provider.getInvoice(id).then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ProviderError);
  expect((error as ProviderError).kind).toBe('malformed');
  expect((error as ProviderError).message).toContain(id);
}

// Kaspi: the fleet relay reads Kaspi for the device. Kaspi's status answer names no QR, its details
// do; the relay refuses details about another QR, and the device reads that refusal as malformed.
describe.each(['gerege', 'qutpay', 'qpay', 'kaspi'] as const)('%s: a read that answers with another invoice', (provider) => {
  it('is a malformed answer, never a reading of the other invoice', { timeout: 120_000 }, async () => {
    const h = (harness = await startHarness(provider));
    const currency = provider === 'kaspi' ? 'KZT' : 'MNT';
    const x = await h.provider.createInvoice(request(1, currency));
    const y = await h.provider.createInvoice(request(2, currency));
    await h.sim.pay(x.id);
    h.sim.answerReadsWith(y.id, x.id);

    await expectMalformedRead(h, y.id);
    h.sim.answerReadsWith(y.id, null);
    expect((await h.provider.getInvoice(y.id)).id).toBe(y.id);
  });
});

// Kaspi's payment/status names no QR; the relay reads its details (which do) for what was paid.
describe('kaspi: what Kaspi says was paid', () => {
  it("a payment of another amount is read as that amount, never as the QR's own", { timeout: 120_000 }, async () => {
    const h = (harness = await startHarness('kaspi'));
    const qr = await h.provider.createInvoice(request(1, 'KZT'));
    await h.sim.pay(qr.id, { amount: 999 });

    const read = await h.provider.getInvoice(qr.id);
    expect(read.status).toBe('paid');
    expect(read.amount).toBe(999);
  });

  it('a Processed status whose own details show nothing paid is malformed, never paid; read again', { timeout: 120_000 }, async () => {
    const h = (harness = await startHarness('kaspi'));
    const x = await h.provider.createInvoice(request(1, 'KZT'));
    const y = await h.provider.createInvoice(request(2, 'KZT'));
    await h.sim.pay(x.id);
    // Only y's status answer is x's (Processed); y's details are y's own: TotalAmount 0.
    h.sim.answerStatusWith(y.id, x.id);

    await expectMalformedRead(h, y.id);
    expect(h.sim.records().refunds).toHaveLength(0);
    h.sim.answerStatusWith(y.id, null);
    const again = await h.provider.getInvoice(y.id);
    expect(again.status).toBe('pending');
  });
});

describe('a create resumed after a restart', () => {
  it('sends the body its key was made with, even after the settings changed', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({ config: { provider: { invoiceTtlSec: 60 } } }));
    await s.svc.kill('SIGTERM');
    // The invoice is created at the provider and the process dies before it records the answer.
    await s.svc.restart({ env: { ...s.env, VENDGATE_CRASH_AT: 'after_invoice_create' } });
    await s.call('POST', '/api/orders', { slot: 'A1' }).catch(() => null);
    await s.svc.exited();
    expect(s.sim.records().createCalls).toHaveLength(1);

    // A technician changes the invoice lifetime before the service comes back.
    const config = parse(readFileSync(s.svc.configPath, 'utf8'));
    config.provider.invoiceTtlSec = 90;
    writeFileSync(s.svc.configPath, stringify(config));
    await s.svc.restart({ env: s.env });

    const resumed = await waitFor(
      async () => {
        const current = await s.order(1);
        return current && current.state !== 'creating' ? current : null;
      },
      { timeoutMs: 20_000, what: 'the interrupted order to be resumed' },
    );
    expect(resumed.state).not.toBe('failed');
    expect(s.sim.records().createCalls.map((c) => c.outcome)).toEqual(['created', 'replayed']);
    expect(s.query("SELECT name FROM alarms WHERE name LIKE 'idempotency_conflict%'")).toHaveLength(0);
  });
});

describe('a capture that can never succeed', () => {
  it('gives up with one alarm instead of being retried forever', { timeout: 120_000 }, async () => {
    const s = (stack = await startProviderStack({
      config: { provider: { captureMode: 'manual' }, actuator: { sim: { durationMs: 1_500 } } },
    }));
    const placed = await s.placeOrder();
    await s.sim.pay(placed.invoiceId!);
    await waitFor(async () => (await s.order(placed.orderId))?.state === 'vending', { what: 'the vend to start' });
    // Meanwhile another system of the merchant cancels the authorization.
    const token = await fetch(`${s.sim.url}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${s.sim.info().clientId}:${s.sim.info().clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    }).then((r) => r.json() as Promise<{ access_token: string }>);
    const canceled = await fetch(`${s.sim.url}/payment-intents/${placed.invoiceId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(canceled.status).toBe(200);

    const job = await waitFor(
      () =>
        s.query<{ capture_state: string }>(
          "SELECT capture_state FROM vend_jobs WHERE order_id = ? AND capture_state = 'failed'",
          placed.orderId,
        )[0],
      { timeoutMs: 20_000, what: 'the capture to be given up' },
    );
    expect(job.capture_state).toBe('failed');
    expect(s.query('SELECT name FROM alarms WHERE name = ?', `capture_failed/${placed.orderId}`)).toHaveLength(1);
    const captures = () => s.sim.records().requests.filter((r) => r.path.endsWith(`${placed.invoiceId}/capture`)).length;
    const given = captures();
    const alarmRows = () => s.query('SELECT seq FROM outbox WHERE topic = ?', `alarms/capture_failed/${placed.orderId}`).length;
    const rowsThen = alarmRows();

    // Another whole sale later, the dead capture has not been tried again.
    const next = await s.placeOrder('A2');
    await s.sim.pay(next.invoiceId!);
    await waitFor(() => s.query("SELECT 1 FROM vend_jobs WHERE order_id = ? AND capture_state = 'done'", next.orderId).length === 1, {
      timeoutMs: 20_000,
      what: 'the next order to be captured',
    });
    expect(captures()).toBe(given);
    expect(alarmRows()).toBe(rowsThen);
  });
});
