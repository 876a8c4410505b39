import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSandboxProvider, signSandboxPayload, type SandboxDelivery, type SandboxProvider } from '../../src/payments/sandbox/index.js';
import { createManualClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { tempDir } from '../helpers/temp.js';

const request = {
  idempotencyKey: 'vm-1-abc-1-pay',
  reference: 'vm-1-abc-1',
  amount: 1500,
  currency: 'MNT',
  description: 'Water',
  expiresInSec: 60,
  captureMode: 'automatic' as const,
};

describe('sandbox provider', () => {
  let dir: ReturnType<typeof tempDir>;
  let clock: ReturnType<typeof createManualClock>;
  let sandbox: SandboxProvider;
  const deliveries: SandboxDelivery[] = [];
  beforeEach(() => {
    dir = tempDir();
    clock = createManualClock();
    sandbox = createSandboxProvider(
      { clock, logger: silentLogger() },
      { dbPath: join(dir.path, 'sandbox.db'), payUrl: (id) => `http://pay/${id}`, webhookSecret: 'whsec' },
    );
    deliveries.length = 0;
    sandbox.onDelivery((d) => deliveries.push(d));
  });
  afterEach(() => {
    sandbox.close();
    dir.cleanup();
  });

  it('answers a repeated key with the same invoice and a different body with a conflict', async () => {
    const first = await sandbox.provider.createInvoice(request);
    const again = await sandbox.provider.createInvoice(request);
    expect(again).toEqual({ ...first, replayed: true });
    await expect(sandbox.provider.createInvoice({ ...request, amount: 9 })).rejects.toMatchObject({
      kind: 'conflict',
      providerCode: 'idempotency_conflict',
    });
  });

  it('keeps its invoices across a restart of the gateway (its own file)', async () => {
    const invoice = await sandbox.provider.createInvoice(request);
    sandbox.close();
    const reopened = createSandboxProvider(
      { clock, logger: silentLogger() },
      { dbPath: join(dir.path, 'sandbox.db'), payUrl: (id) => `http://pay/${id}`, webhookSecret: 'whsec' },
    );
    expect((await reopened.provider.getInvoice(invoice.id)).id).toBe(invoice.id);
    reopened.close();
  });

  it('pays, signs a webhook for it that verifies, and refuses a tampered body', async () => {
    const invoice = await sandbox.provider.createInvoice(request);
    await sandbox.payments.pay(invoice.id);
    expect((await sandbox.provider.getInvoice(invoice.id)).status).toBe('paid');
    const delivery = deliveries.at(-1)!;
    const context = { secrets: ['old', 'whsec'], toleranceSec: 300, now: clock.now() };
    expect(sandbox.provider.verifyWebhook(delivery.rawBody, delivery.headers, context)).toMatchObject({
      event: { type: 'invoice.paid', objectId: invoice.id, livemode: false },
      // Signed with the second of the two secrets: the verifier says so.
      secretIndex: 1,
    });
    const tampered = Buffer.from(delivery.rawBody.toString().replace('1500', '1'));
    expect(() => sandbox.provider.verifyWebhook(tampered, delivery.headers, context)).toThrow(/parsed or re-serialised/);
    const stale = { 'sandbox-signature': signSandboxPayload(delivery.rawBody, 'whsec', Math.floor(clock.now() / 1000) - 301) };
    expect(() => sandbox.provider.verifyWebhook(delivery.rawBody, stale, context)).toThrow(/tolerance/);
  });

  it('expires unpaid invoices by the clock and refuses to pay them', async () => {
    const invoice = await sandbox.provider.createInvoice(request);
    clock.advance(61_000);
    expect((await sandbox.provider.getInvoice(invoice.id)).status).toBe('expired');
    await expect(sandbox.payments.pay(invoice.id)).rejects.toMatchObject({ code: 'VG_ERR_ORDER_STATE' });
  });

  it('lets a canceled QR be paid until it expires, like QutPay', async () => {
    const invoice = await sandbox.provider.createInvoice(request);
    await sandbox.provider.cancelInvoice(invoice.id);
    await sandbox.payments.pay(invoice.id);
    expect((await sandbox.provider.getInvoice(invoice.id)).status).toBe('paid');
  });

  it('refunds a paid invoice once and answers a repeated refund with the same success', async () => {
    const invoice = await sandbox.provider.createInvoice(request);
    await sandbox.payments.pay(invoice.id);
    const refund = { invoiceId: invoice.id, amount: 1500, idempotencyKey: 'vm-1-abc-1-refund' };
    expect(await sandbox.provider.refund(refund)).toMatchObject({ status: 'succeeded' });
    expect(await sandbox.provider.refund(refund)).toMatchObject({ status: 'succeeded' });
    expect((await sandbox.provider.getInvoice(invoice.id)).status).toBe('refunded');
    const { events } = await sandbox.provider.listEvents!({});
    expect(events.map((e) => e.event.type)).toEqual(['invoice.paid', 'invoice.refunded']);
  });

  it('holds the money first in manual capture mode, and capture makes it paid', async () => {
    const invoice = await sandbox.provider.createInvoice({ ...request, idempotencyKey: 'k2', captureMode: 'manual' });
    await sandbox.payments.pay(invoice.id);
    expect((await sandbox.provider.getInvoice(invoice.id)).status).toBe('authorized');
    expect((await sandbox.provider.captureInvoice(invoice.id)).status).toBe('paid');
  });
});
