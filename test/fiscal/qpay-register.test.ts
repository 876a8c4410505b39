import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildFiscalCore, type FiscalHarness } from './harness.js';
import { createQpayEbarimtRegister } from '../../src/fiscal/qpay/index.js';
import { createRegister, type FiscalRegister, type ReceiptRequest } from '../../src/fiscal/index.js';
import { createQpayProvider } from '../../src/payments/adapters.js';
import { createSimulator, type Simulator } from '../../src/simulator/index.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { systemClock, type Clock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { saleRequest } from '../techniques/contract/register-harness.js';

/**
 * `fiscal.register: qpay`: the eBarimt receipt of a QPay payment filed through QPay's `ebarimt_v3`,
 * against the QPay simulator over HTTP (its eBarimt route with faults of its own). QPay documents
 * neither a read of a payment's receipt nor what a second create does (the simulator files a
 * second receipt by default, the worst reading): a receipt is sent again only when QPay certainly
 * did not take it, and an answer lost is for a person, never a second receipt.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function qpaySim(): Promise<Simulator> {
  const sim = createSimulator({ provider: 'qpay', seed: 11, currency: 'MNT', expirySweepMs: 0 });
  await sim.start();
  cleanups.push(() => sim.stop());
  return sim;
}

function register(
  sim: Simulator,
  clock: Clock = systemClock,
  more: { clientSecret?: string; baseUrl?: string; timeoutMs?: number } = {},
): FiscalRegister {
  const info = sim.info();
  return createQpayEbarimtRegister({
    baseUrl: more.baseUrl ?? sim.url,
    clientId: info.clientId!,
    clientSecret: more.clientSecret ?? info.clientSecret!,
    receiverType: 'CITIZEN',
    districtCode: '3505',
    defaultClassificationCode: '2441100',
    timeoutMs: more.timeoutMs ?? 1_500,
    logger: silentLogger(),
    clock,
  });
}

/** A QPay invoice paid at the simulator, as the payment adapter makes it. */
async function paidInvoice(sim: Simulator, amount = 2800): Promise<string> {
  const info = sim.info();
  const provider = createQpayProvider(
    { clock: systemClock, logger: silentLogger() },
    {
      baseUrl: sim.url,
      clientId: info.clientId!,
      clientSecret: info.clientSecret!,
      invoiceCode: info.invoiceCode!,
      invoiceReceiverCode: 'terminal',
      callbackUrl: 'https://example.invalid/webhooks/qpay',
      currency: 'MNT',
      livemode: false,
      requestTimeoutMs: 2_000,
      createDeadlineMs: 5_000,
    },
  );
  const reference = `qr-${process.pid}-${Math.random().toString(16).slice(2, 10)}`;
  const invoice = await provider.createInvoice({
    idempotencyKey: `${reference}-pay-1`,
    reference,
    amount,
    currency: 'MNT',
    description: 'Cola',
    expiresInSec: 300,
    captureMode: 'automatic',
  });
  await sim.pay(invoice.id);
  return invoice.id;
}

async function sale(sim: Simulator, amount = 2800): Promise<ReceiptRequest> {
  const invoiceId = await paidInvoice(sim, amount);
  return saleRequest({ payment: { provider: 'qpay', invoiceId } });
}

const filed = (sim: Simulator) => sim.records().qpayEbarimts;

describe('QPay eBarimt register against the QPay simulator', () => {
  it("files the payment's receipt: one eBarimt for that payment, its district and classification, the id a return needs", async () => {
    const sim = await qpaySim();
    const request = await sale(sim);
    const outcome = await register(sim).issue(request);
    expect(outcome).toMatchObject({ kind: 'issued', receipt: { offline: false } });
    const receipts = filed(sim);
    expect(receipts).toHaveLength(1);
    expect(receipts[0]).toMatchObject({ receiverType: 'CITIZEN', districtCode: '3505', classificationCode: '2441100', returnedAt: null });
    if (outcome.kind !== 'issued') throw new Error('not issued');
    expect(outcome.receipt.registerId).toBe(receipts[0]!.id);
    expect(outcome.receipt.lottery).toMatch(/^SM \d{8}$/);
  });

  it('an answer lost after QPay filed it is unknown, and lookup cannot tell (never absent): one receipt', async () => {
    const sim = await qpaySim();
    const request = await sale(sim);
    const r = register(sim);
    sim.setEbarimtFaults({ lostResponse: 1 });
    expect((await r.issue(request)).kind).toBe('unknown');
    expect((await r.lookup(request)).kind).toBe('cannot_tell');
    expect(filed(sim)).toHaveLength(1);
  });

  it('a timeout is unknown too (the adapter cannot tell it from a lost answer); 500 is unknown; 429 and 503 are unavailable and file nothing', async () => {
    const sim = await qpaySim();
    // The timeout fault holds the call until the adapter gives up: half a second, not the 1.5 s of the others.
    const r = register(sim, systemClock, { timeoutMs: 500 });
    sim.setEbarimtFaults({ timeout: 1 });
    expect((await r.issue(await sale(sim))).kind).toBe('unknown');
    sim.setEbarimtFaults({ timeout: 0, rateLimit: 1 });
    expect((await r.issue(await sale(sim))).kind).toBe('unavailable');
    expect(filed(sim)).toHaveLength(0);
    // A payment fault never touches receipts, and the other way round: the payment read still works.
    sim.setEbarimtFaults({ rateLimit: 0 });
    sim.setFaults({ serverError: 1 });
    expect((await r.issue(await sale(sim).catch(() => saleRequest({ payment: { provider: 'qpay', invoiceId: 'x' } })))).kind).toBe(
      'unavailable',
    );
    expect(filed(sim)).toHaveLength(0);
  });

  it('an unreachable QPay is unavailable; refused credentials block every receipt; an expired token is renewed once', async () => {
    const sim = await qpaySim();
    const request = await sale(sim);
    expect((await register(sim, systemClock, { baseUrl: 'http://127.0.0.1:9' }).issue(request)).kind).toBe('unavailable');
    expect((await register(sim, systemClock, { clientSecret: 'not-the-secret' }).issue(request)).kind).toBe('blocked');
    const r = register(sim);
    expect((await r.status()).ready).toBe(true);
    sim.revokeTokens();
    expect((await r.issue(request)).kind).toBe('issued');
    expect(filed(sim)).toHaveLength(1);
  });

  it('returns a receipt in full; a retry of the return after a lost answer is done, not refused', async () => {
    const sim = await qpaySim();
    const request = await sale(sim);
    const r = register(sim);
    const issued = await r.issue(request);
    if (issued.kind !== 'issued') throw new Error(`not issued: ${JSON.stringify(issued)}`);
    sim.setEbarimtFaults({ lostResponse: 1 });
    expect((await r.returnReceipt(issued.receipt, request, `${request.key}-return`)).kind).toBe('unknown');
    sim.setEbarimtFaults({ lostResponse: 0 });
    expect((await r.returnReceipt(issued.receipt, request, `${request.key}-return`)).kind).toBe('issued');
    expect(filed(sim).map((e) => e.returnedAt !== null)).toEqual([true]);
  });

  it('files nothing for a payment that is not one QPay payment of the sale, or a sale of another provider', async () => {
    const sim = await qpaySim();
    const request = await sale(sim, 2800);
    const r = register(sim);
    expect(await r.issue({ ...request, total: 1500 })).toMatchObject({ kind: 'rejected', code: 'qpay_no_single_payment' });
    expect(await r.issue({ ...request, payment: { provider: 'gerege', invoiceId: 'pi_1' } })).toMatchObject({ kind: 'rejected' });
    expect(filed(sim)).toHaveLength(0);
  });
});

/** A QPay that answers the token and the payment read, and then `create` with whatever the test says. */
async function badQpay(create: { status: number; body: string }): Promise<{ url: string; creates: () => number }> {
  let creates = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/v2/auth/token') return res.end(JSON.stringify({ access_token: 'tok', expires_in: 3600 }));
      if (req.url === '/v2/payment/check')
        // The harness sells slot A1 (1,500).
        return res.end(JSON.stringify({ count: 1, rows: [{ payment_id: '123', payment_status: 'PAID', payment_amount: 1500 }] }));
      creates += 1;
      res.statusCode = create.status;
      return res.end(create.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, creates: () => creates };
}

/** Fake-provider invoices of the harness stand for QPay invoices paid at the simulator: mapped once, kept across restarts. */
function harnessRegister(sim: Simulator, baseUrl?: string) {
  const mapped = new Map<string, string>();
  const map = async (request: ReceiptRequest): Promise<ReceiptRequest> => {
    let invoiceId = mapped.get(request.payment.invoiceId);
    if (invoiceId === undefined) {
      invoiceId = await paidInvoice(sim, request.total);
      mapped.set(request.payment.invoiceId, invoiceId);
    }
    return { ...request, payment: { provider: 'qpay', invoiceId } };
  };
  return (clock: Clock): FiscalRegister => {
    const inner = register(sim, clock, baseUrl ? { baseUrl } : {});
    return {
      name: inner.name,
      issue: async (request) => inner.issue(await map(request)),
      lookup: async (request) => inner.lookup(await map(request)),
      returnReceipt: async (original, request, key) => inner.returnReceipt(original, await map(request), key),
      status: () => inner.status(),
    };
  };
}

const qpayFiscal = { register: 'qpay', qpay: { districtCode: '3505' }, lookupEveryMs: 60_000 };
/** The provider settings `register: qpay` requires (the harness's payments are its fake provider's). */
const qpayProvider = {
  name: 'qpay',
  baseUrl: 'http://127.0.0.1:9',
  clientId: 'c',
  clientSecret: 's',
  invoiceCode: 'I',
  callbackUrl: 'https://x.example/webhooks/qpay',
};

describe('the fiscal worker with fiscal.register qpay: one receipt per sale, whatever is lost', () => {
  let h: FiscalHarness | null = null;
  afterEach(async () => {
    await h?.close();
    h = null;
  });

  it('an answer lost after QPay filed it: the receipt waits for a person, and however often the worker runs, QPay holds one', async () => {
    const sim = await qpaySim();
    h = buildFiscalCore({ register: harnessRegister(sim), fiscal: { ...qpayFiscal, alarmUnknownAfterMin: 1 }, provider: qpayProvider });
    const order = await h.sell();
    sim.setEbarimtFaults({ lostResponse: 1 });
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'unknown', attempts: 1 });
    sim.setEbarimtFaults({ lostResponse: 0 });
    for (let i = 0; i < 5; i += 1) {
      h.clock.advance(61_000);
      await h.pass();
    }
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'unknown', attempts: 1 });
    expect(h.alarms()).toContain(`receipt_unknown/${order.id}`);
    expect(filed(sim)).toHaveLength(1);
  });

  it('QPay busy (429) then back: the same receipt is sent again once QPay takes it, one receipt', async () => {
    const sim = await qpaySim();
    h = buildFiscalCore({ register: harnessRegister(sim), fiscal: qpayFiscal, provider: qpayProvider });
    const order = await h.sell();
    sim.setEbarimtFaults({ rateLimit: 1 });
    await h.pass();
    expect(h.receipts(order.id)[0]!.state).not.toBe('issued');
    expect(filed(sim)).toHaveLength(0);
    sim.setEbarimtFaults({ rateLimit: 0 });
    h.clock.advance(120_000);
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'issued' });
    expect(filed(sim)).toHaveLength(1);
  });

  it('a crash after QPay filed the receipt but before its answer was written: after the restart, never a second receipt', async () => {
    const sim = await qpaySim();
    h = buildFiscalCore({ register: harnessRegister(sim), fiscal: qpayFiscal, provider: qpayProvider });
    const order = await h.sell();
    h.crash.at = 'after_receipt_call';
    await expect(h.fiscal.worker.run()).rejects.toThrow(/crash/);
    await h.restart();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'unknown' });
    for (let i = 0; i < 3; i += 1) {
      h.clock.advance(61_000);
      await h.pass();
    }
    expect(filed(sim)).toHaveLength(1);
    expect(h.receipts(order.id)[0]!.state).toBe('unknown');
  });

  it('a refund of a receipted sale returns that receipt at QPay, once', async () => {
    const sim = await qpaySim();
    h = buildFiscalCore({ register: harnessRegister(sim), fiscal: qpayFiscal, provider: qpayProvider });
    const order = await h.sell();
    await h.pass();
    expect(h.receipts(order.id)[0]).toMatchObject({ state: 'issued' });
    h.node.money.vend.refund(order.id, 'test');
    await h.node.money.refunds.run();
    await h.pass();
    h.clock.advance(61_000);
    await h.pass();
    expect(filed(sim).map((e) => e.returnedAt !== null)).toEqual([true]);
  });

  it.each([
    ['a 200 that is not JSON', { status: 200, body: '<html>ok</html>' }, 'unknown'],
    ['a 200 without an id', { status: 200, body: '{"status":true}' }, 'unknown'],
    ['a refusal in QPay words', { status: 400, body: '{"error":"INVALID_DISTRICT_CODE","message":"district"}' }, 'rejected'],
  ])('a bad register answer (%s) changes nothing but the receipt row, and is never sent again', async (_what, answer, state) => {
    const sim = await qpaySim();
    const bad = await badQpay(answer);
    h = buildFiscalCore({ register: harnessRegister(sim, bad.url), fiscal: qpayFiscal, provider: qpayProvider });
    const order = await h.sell();
    const before = h.node.orderRepository.get(order.id);
    await h.pass();
    for (let i = 0; i < 3; i += 1) {
      h.clock.advance(61_000);
      await h.pass();
    }
    expect(h.receipts(order.id)[0]!.state).toBe(state);
    expect(bad.creates()).toBe(1);
    expect(h.node.orderRepository.get(order.id)).toEqual(before);
  });
});

describe('fiscal.register qpay in the settings', () => {
  it("builds the register from QPay's provider credentials and refuses it with another provider or without a district", async () => {
    const sim = await qpaySim();
    const info = sim.info();
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const settings = testSettings(dir.path, {
      provider: {
        name: 'qpay',
        baseUrl: sim.url,
        clientId: info.clientId,
        clientSecret: info.clientSecret,
        invoiceCode: info.invoiceCode,
        callbackUrl: 'https://x.example/webhooks/qpay',
      },
      fiscal: { register: 'qpay', qpay: { districtCode: '3505' } },
    });
    const built = (await createRegister(settings, { clock: systemClock, logger: silentLogger() }))!;
    expect(built.name).toBe('qpay');
    expect((await built.issue(await sale(sim))).kind).toBe('issued');
    expect(() => testSettings(dir.path, { fiscal: { register: 'qpay', qpay: { districtCode: '3505' } } })).toThrow(/provider\.name qpay/);
    expect(() => testSettings(dir.path, { provider: qpayProvider, fiscal: { register: 'qpay' } })).toThrow(/districtCode/);
  });
});
