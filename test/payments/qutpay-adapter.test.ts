import { describe, expect, it } from 'vitest';
import { cleanup, stop } from '../helpers/cleanup.js';
import type { PaymentProvider } from '../../src/payments/types.js';
import { createQutpayProvider, QUTPAY_STATUS_MAP } from '../../src/payments/qutpay/index.js';
import { adapterDeps, invoiceRequest, startFakeProviderServer, type RecordedRequest, type Reply } from './fake-provider-server.js';

const API_KEY = 'qp_test_0123456789abcdef';
const request = invoiceRequest(2500, 'KZT', 'Water');

function invoice(overrides: Record<string, unknown> = {}) {
  return {
    id: 'inv_7',
    status: 'pending',
    amount: 2500,
    description: 'Water',
    externalOrderId: 'vm-1-7',
    payUrl: 'https://pay.qutpay.test/inv_7',
    qr: 'qutpay://inv_7',
    expiresAt: '2026-11-29T12:02:00.000Z',
    livemode: false,
    ...overrides,
  };
}

const defer = cleanup();

async function setup(
  api: (req: RecordedRequest, index: number) => Reply,
  apiKey = API_KEY,
): Promise<{ provider: PaymentProvider; requests: RecordedRequest[]; logs: string[] }> {
  const server = defer(await startFakeProviderServer(api), stop);
  const { logs, deps } = adapterDeps();
  const provider = createQutpayProvider(deps, {
    baseUrl: server.url,
    apiKey,
    currency: 'KZT',
    requestTimeoutMs: 2_000,
    createDeadlineMs: 20_000,
  });
  return { provider, requests: server.requests, logs };
}

describe('QutPay invoices', () => {
  it('create sends the API key, the Idempotency-Key and exactly the wire-format body', async () => {
    const { provider, requests } = await setup(() => ({ status: 201, json: invoice() }));
    const result = await provider.createInvoice(request);
    const [call] = requests;
    expect(call).toMatchObject({
      method: 'POST',
      path: '/api/v1/invoices',
      body: '{"amount":2500,"description":"Water","externalOrderId":"vm-1-7"}',
    });
    expect(call!.headers['x-api-key']).toBe(API_KEY);
    expect(call!.headers['idempotency-key']).toBe('vm-1-db1-7-pay');
    expect(result).toEqual({
      id: 'inv_7',
      status: 'pending',
      providerStatus: 'pending',
      amount: 2500,
      currency: 'KZT',
      reference: 'vm-1-7',
      livemode: false,
      payUrl: 'https://pay.qutpay.test/inv_7',
      expiresAt: Date.parse('2026-11-29T12:02:00.000Z'),
      refundedAmount: 0,
      ...('description' in result ? { description: result.description } : {}),
    });
  });

  it('a 200 with idempotentReplay is success, marked replayed', async () => {
    const { provider } = await setup(() => ({ status: 200, json: { ...invoice(), idempotentReplay: true } }));
    await expect(provider.createInvoice(request)).resolves.toMatchObject({ id: 'inv_7', replayed: true });
  });

  it('a replay of an old key with another amount is returned faithfully and logged', async () => {
    const { provider, logs } = await setup(() => ({ status: 200, json: { ...invoice({ amount: 1000 }), idempotentReplay: true } }));
    await expect(provider.createInvoice(request)).resolves.toMatchObject({ amount: 1000, replayed: true });
    expect(logs.join('')).toContain('created invoice differs from the request');
  });

  it('a 5xx on create is retried with the same key and body until it succeeds', async () => {
    const { provider, requests } = await setup((_req, index) =>
      index < 2 ? { status: 503, json: { error: 'unavailable' } } : { status: 200, json: { ...invoice(), idempotentReplay: true } },
    );
    await expect(provider.createInvoice(request)).resolves.toMatchObject({ id: 'inv_7' });
    expect(requests).toHaveLength(3);
    expect(new Set(requests.map((r) => `${r.headers['idempotency-key']}|${r.body}`)).size).toBe(1);
  });

  it('manual capture is refused without a call', async () => {
    const { provider, requests } = await setup(() => ({ status: 201, json: invoice() }));
    await expect(provider.createInvoice({ ...request, captureMode: 'manual' })).rejects.toMatchObject({ kind: 'rejected' });
    await expect(provider.captureInvoice('inv_7')).rejects.toMatchObject({ kind: 'rejected' });
    expect(requests).toHaveLength(0);
  });

  it.each(Object.entries(QUTPAY_STATUS_MAP))('invoice status %s reads as %s', async (word, canonical) => {
    const { provider } = await setup(() => ({ status: 200, json: { ...invoice({ status: word }), refunds: [] } }));
    await expect(provider.getInvoice('inv_7')).resolves.toMatchObject({ status: canonical, providerStatus: word });
  });

  it('an unknown status reads as pending and is logged once per word', async () => {
    const { provider, logs } = await setup(() => ({ status: 200, json: invoice({ status: 'frozen' }) }));
    await provider.getInvoice('inv_7');
    await provider.getInvoice('inv_7');
    expect(logs.filter((line) => line.includes('unknown provider status'))).toHaveLength(1);
  });

  it('without livemode in the answer, the key prefix decides', async () => {
    const { livemode: _omit, ...noLivemode } = invoice();
    const live = await setup(() => ({ status: 200, json: noLivemode }), 'qp_live_abc');
    await expect(live.provider.getInvoice('inv_7')).resolves.toMatchObject({ livemode: true });
  });

  it('cancel posts to the invoice and maps the answer', async () => {
    const { provider, requests } = await setup(() => ({ status: 200, json: invoice({ status: 'cancelled' }) }));
    await expect(provider.cancelInvoice('inv_7')).resolves.toMatchObject({ status: 'canceled', providerStatus: 'cancelled' });
    expect(requests[0]).toMatchObject({ method: 'POST', path: '/api/v1/invoices/inv_7/cancel' });
  });

  it.each<[string, unknown]>([
    ['an invoice whose expiresAt is not a date', invoice({ expiresAt: 'tomorrow' })],
    ['an invoice without externalOrderId', { ...invoice(), externalOrderId: undefined }],
    ['a list instead of an invoice', [invoice()]],
  ])('%s is a malformed error', async (_what, json) => {
    const { provider } = await setup(() => ({ status: 200, json }));
    await expect(provider.getInvoice('inv_7')).rejects.toMatchObject({ kind: 'malformed' });
  });
});

describe('QutPay refunds', () => {
  it('a refund sends the amount with its Idempotency-Key once and reports the status', async () => {
    const { provider, requests } = await setup(() => ({ status: 200, json: { id: 'rf_1', status: 'succeeded' } }));
    await expect(provider.refund({ invoiceId: 'inv_7', amount: 2500, idempotencyKey: 'vm-1-db1-7-refund' })).resolves.toEqual({
      status: 'succeeded',
      refundId: 'rf_1',
    });
    expect(requests[0]).toMatchObject({ method: 'POST', path: '/api/v1/invoices/inv_7/refund', body: '{"amount":2500}' });
    expect(requests[0]!.headers['idempotency-key']).toBe('vm-1-db1-7-refund');
  });

  it.each<[string, Reply]>([
    ['refund_unknown (502)', { status: 502, json: { error: 'refund_unknown', message: 'bank did not answer' } }],
    ['refund_pending_unknown (504)', { status: 504, json: { error: 'refund_pending_unknown' } }],
    ['a dropped connection', { drop: true }],
    ['a 500', { status: 500, json: { error: 'internal' } }],
  ])('%s is an unknown outcome and exactly one refund call is made', async (_what, reply) => {
    const { provider, requests } = await setup(() => reply);
    await expect(provider.refund({ invoiceId: 'inv_7', amount: 2500, idempotencyKey: 'k' })).resolves.toMatchObject({ status: 'unknown' });
    expect(requests).toHaveLength(1);
  });

  it('a refund status the adapter does not know is unknown, not guessed', async () => {
    const { provider } = await setup(() => ({ status: 200, json: { id: 'rf_1', status: 'queued_for_review' } }));
    await expect(provider.refund({ invoiceId: 'inv_7', amount: 2500, idempotencyKey: 'k' })).resolves.toMatchObject({
      status: 'unknown',
      refundId: 'rf_1',
    });
  });

  it('a refused refund throws the provider code', async () => {
    const { provider } = await setup(() => ({ status: 400, json: { error: 'amount_exceeds_paid' } }));
    await expect(provider.refund({ invoiceId: 'inv_7', amount: 9_999, idempotencyKey: 'k' })).rejects.toMatchObject({
      kind: 'rejected',
      providerCode: 'amount_exceeds_paid',
    });
  });
});

describe('QutPay credentials', () => {
  it('a 404 for the probe invoice proves the key was accepted', async () => {
    const { provider, requests } = await setup(() => ({ status: 404, json: { error: 'not_found' } }));
    await expect(provider.checkCredentials()).resolves.toMatchObject({ detail: expect.stringContaining('API key accepted') });
    expect(requests[0]!.method).toBe('GET');
  });

  it('a 401 is an auth error, and the key never appears in the log', async () => {
    const { provider, logs } = await setup(() => ({ status: 401, json: { error: 'invalid_api_key' } }));
    await expect(provider.checkCredentials()).rejects.toMatchObject({ kind: 'auth', providerCode: 'invalid_api_key' });
    expect(logs.join('')).not.toContain(API_KEY);
  });
});
