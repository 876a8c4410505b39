/**
 * QPay v2 over HTTP (docs/providers.md, "QPay"): OAuth tokens that expire (access and refresh),
 * invoices with `sender_invoice_no`, payment/check, deletes for cancel and refund, and unsigned
 * callbacks to each invoice's own `callback_url`. What QPay does with a repeated
 * `sender_invoice_no` is not documented: `duplicateNumbers` plays each reading.
 */
import type { FastifyRequest } from 'fastify';
import type { ApiResult, ApiRoute, ProviderBackend, SimContext } from './context.js';
import { headerValue } from './context.js';
import { createBackendRecords } from './backend-records.js';
import { SimHttpError, checkObjectBody } from './request-checks.js';
import { createQpayState, parseQpayCreateBody } from './qpay-state.js';
import { qpayEbarimtRoutes, type QpayEbarimtRepeat } from './qpay-ebarimt.js';

/** refuse: a second create with a number is refused; first: answered with the first invoice; create: a second invoice. */
export type QpayDuplicateNumbers = 'refuse' | 'first' | 'create';

export interface QpayOptions {
  clientId: string;
  clientSecret: string;
  tokenTtlSec: number;
  invoiceCode: string;
  duplicateNumbers: QpayDuplicateNumbers;
  currency: string;
  maxAttempts: number;
  /** What a second eBarimt create for a payment that has a receipt does (undocumented): default `create`. */
  ebarimtRepeat?: QpayEbarimtRepeat;
}

export function createQpayBackend(ctx: SimContext, options: QpayOptions): ProviderBackend {
  const state = createQpayState(ctx, { currency: options.currency });
  const access = new Map<string, number>();
  const refresh = new Map<string, number>();
  const { recordCreate, created, readRoute, answerReadsWith } = createBackendRecords(ctx);

  function bearer(request: FastifyRequest): string {
    const [, token] = /^Bearer (\S+)$/.exec(headerValue(request, 'authorization') ?? '') ?? [];
    if (token === undefined) throw new SimHttpError(401, 'NO_CREDENDIALS', 'Authorization: Bearer <access_token> is required');
    return token;
  }

  function requireToken(request: FastifyRequest): void {
    const expiresAt = access.get(bearer(request));
    if (expiresAt === undefined || ctx.clock.now() >= expiresAt)
      throw new SimHttpError(401, 'AUTHENTICATION_FAILED', 'unknown, revoked or expired access token');
  }

  function issue(): ApiResult {
    const now = ctx.clock.now();
    const accessToken = `qat_${ctx.ids.token(32)}`;
    const refreshToken = `qrt_${ctx.ids.token(32)}`;
    access.set(accessToken, now + options.tokenTtlSec * 1000);
    refresh.set(refreshToken, now + options.tokenTtlSec * 2 * 1000);
    // Unix times, as published clients read QPay's `expires_in`; the adapter must take either reading.
    const at = (ttlSec: number) => Math.floor(now / 1000) + ttlSec;
    return {
      status: 200,
      body: {
        token_type: 'bearer',
        access_token: accessToken,
        expires_in: at(options.tokenTtlSec),
        refresh_token: refreshToken,
        refresh_expires_in: at(options.tokenTtlSec * 2),
        scope: 'profile email',
      },
    };
  }

  function token(request: FastifyRequest): ApiResult {
    const [, basic] = /^Basic (\S+)$/.exec(headerValue(request, 'authorization') ?? '') ?? [];
    const decoded = basic === undefined ? '' : Buffer.from(basic, 'base64').toString('utf8');
    if (decoded !== `${options.clientId}:${options.clientSecret}`)
      throw new SimHttpError(401, 'CLIENT_NOTFOUND', 'HTTP Basic client_id:client_secret not accepted');
    return issue();
  }

  function refreshToken(request: FastifyRequest): ApiResult {
    const held = bearer(request);
    const expiresAt = refresh.get(held);
    if (expiresAt === undefined || ctx.clock.now() >= expiresAt)
      throw new SimHttpError(401, 'AUTHENTICATION_FAILED', 'unknown or expired refresh token');
    refresh.delete(held);
    return issue();
  }

  function createInvoice(request: FastifyRequest): ApiResult {
    requireToken(request);
    let fields;
    try {
      fields = parseQpayCreateBody(request.body, options.invoiceCode);
    } catch (err) {
      recordCreate(senderNoOf(request), 'invalid');
      throw err;
    }
    const prior = state.bySenderNo(fields.sender_invoice_no);
    if (prior && options.duplicateNumbers === 'refuse') {
      recordCreate(fields.sender_invoice_no, 'conflict', prior.id);
      throw new SimHttpError(400, 'SENDER_INVOICE_NO_DUPLICATED', `sender_invoice_no ${fields.sender_invoice_no} was used already`);
    }
    const invoice = prior && options.duplicateNumbers === 'first' ? prior : state.create(fields, request.body);
    const call = recordCreate(fields.sender_invoice_no, invoice === prior ? 'replayed' : 'created', invoice.id);
    const qrText = `${ctx.baseUrl()}/__sim/pay/${invoice.id}`;
    return created(call, 200, {
      invoice_id: invoice.id,
      qr_text: qrText,
      qr_image: 'iVBORw0KGgo=',
      qPay_shortUrl: `${ctx.baseUrl()}/__sim/pay/${invoice.id}`,
      urls: [
        { name: 'Sim Bank', description: 'Simulated bank app', logo: '', link: `simbank://q?qPay_QRcode=${encodeURIComponent(qrText)}` },
        { name: 'Sim Wallet', description: 'Simulated wallet', logo: '', link: `simwallet://q?qPay_QRcode=${encodeURIComponent(qrText)}` },
      ],
    });
  }

  function paymentCheck(request: FastifyRequest): ApiResult {
    requireToken(request);
    const body = checkObjectBody(request.body, ['object_type', 'object_id', 'offset']);
    if (body.object_type !== 'INVOICE' || typeof body.object_id !== 'string')
      throw new SimHttpError(400, 'INVALID_REQUEST', 'object_type INVOICE and object_id are required');
    ctx.records.getCalls.push({ id: body.object_id, at: ctx.clock.now() });
    return { status: 200, body: state.check(body.object_id) };
  }

  function paymentDelete(request: FastifyRequest): ApiResult {
    requireToken(request);
    checkObjectBody(request.body ?? {}, ['callback_url', 'note']);
    const { invoice, payment } = state.payment((request.params as { id: string }).id);
    if (ctx.faultRandom.chance(ctx.faults().refundUnknown)) {
      // The bank did not answer QPay in time: the money may or may not have moved.
      const happened = ctx.faultRandom.chance(0.5);
      if (happened) state.refund(invoice, payment);
      ctx.records.refundUnknown.push({
        invoiceId: invoice.id,
        idempotencyKey: payment.payment_id,
        amount: payment.payment_amount,
        happened,
        code: 'refund_unknown',
        httpStatus: 502,
        at: ctx.clock.now(),
        ...(happened ? { refundId: payment.payment_id } : {}),
      });
      throw new SimHttpError(502, 'BANK_TIMEOUT', 'the bank did not answer in time');
    }
    state.refund(invoice, payment);
    return { status: 200, body: { message: 'success' } };
  }

  const routes: ApiRoute[] = [
    { method: 'POST', url: '/v2/auth/token', faults: false, handler: token },
    { method: 'POST', url: '/v2/auth/refresh', faults: false, handler: refreshToken },
    {
      method: 'POST',
      url: '/v2/invoice',
      handler: createInvoice,
      onRejected: (fault, request) => {
        recordCreate(senderNoOf(request), `fault:${fault}`);
      },
    },
    readRoute('/v2/invoice/:id', requireToken, (id) => state.invoiceJson(state.get(id))),
    {
      method: 'DELETE',
      url: '/v2/invoice/:id',
      handler: (request) => {
        requireToken(request);
        state.cancel(state.get((request.params as { id: string }).id));
        return { status: 200, body: { message: 'success' } };
      },
    },
    { method: 'POST', url: '/v2/payment/check', handler: paymentCheck },
    {
      method: 'GET',
      url: '/v2/payment/:id',
      handler: (request) => {
        requireToken(request);
        const { invoice, payment } = state.payment((request.params as { id: string }).id);
        return { status: 200, body: { ...payment, object_type: 'INVOICE', object_id: invoice.id, payment_currency: options.currency } };
      },
    },
    { method: 'DELETE', url: '/v2/payment/refund/:id', handler: paymentDelete },
    { method: 'DELETE', url: '/v2/payment/cancel/:id', handler: paymentDelete },
    ...qpayEbarimtRoutes({
      ctx,
      requireToken,
      payment: (id) => {
        const { payment } = state.payment(id);
        return { amount: payment.payment_amount, status: payment.payment_status };
      },
      repeat: options.ebarimtRepeat ?? 'create',
      records: ctx.records.qpayEbarimts,
    }),
  ];

  return {
    maxAttempts: options.maxAttempts,
    errorBody: (code, message) => ({ error: code, message }),
    routes: () => routes,
    sweep: () => undefined,
    pay: state.pay,
    expire: state.expire,
    fail: state.fail,
    revokeTokens: () => {
      access.clear();
      refresh.clear();
    },
    refundOutside: (id, amount) => {
      const invoice = state.get(id);
      const payment = state.paid(invoice);
      if (!payment) throw new SimHttpError(400, 'PAYMENT_NOT_PAID', `invoice ${id} has no paid payment`);
      if (payment.payment_amount !== amount)
        throw new SimHttpError(400, 'INVALID_REQUEST', `QPay refunds whole payments: ${payment.payment_amount}, not ${amount}`);
      state.refund(invoice, payment);
    },
    answerReadsWith,
    view: (id) => state.view(id),
    // Not signed: QPay's callbacks carry nothing to verify.
    webhookHeaders: () => ({}),
  };
}

function senderNoOf(request: FastifyRequest): string | null {
  const body = request.body as { sender_invoice_no?: unknown } | undefined;
  return typeof body?.sender_invoice_no === 'string' ? body.sender_invoice_no : null;
}
