import type { FastifyRequest } from 'fastify';
import type { ApiResult, ApiRoute, ProviderBackend, SimContext } from './context.js';
import { headerValue } from './context.js';
import { createBackendRecords } from './backend-records.js';
import { SimHttpError, checkObjectBody, isPositiveInteger, readIdempotencyKey } from './request-checks.js';
import { createQutpayState, parseCreateBody } from './qutpay-state.js';
import { signQutpayWebhook } from './signing.js';

export interface QutpayOptions {
  apiKey: string;
  webhookSecret: string;
  invoiceTtlSec: number;
  currency: string;
  maxAttempts: number;
}

export function createQutpayBackend(ctx: SimContext, options: QutpayOptions): ProviderBackend {
  const state = createQutpayState(ctx, options);
  const invoiceKeys = new Map<string, string>();
  const refundKeys = new Map<string, { invoiceId: string; refundId: string }>();
  const { recordCreate, created, orInvalid, createRoute, readRoute, answerReadsWith } = createBackendRecords(ctx);

  function requireApiKey(request: FastifyRequest): void {
    if (headerValue(request, 'x-api-key') !== options.apiKey)
      throw new SimHttpError(401, 'unauthorized', 'a valid X-API-Key header is required');
  }

  function createInvoice(request: FastifyRequest): ApiResult {
    requireApiKey(request);
    const key = orInvalid(null, () => readIdempotencyKey(request.headers, false));
    // A replay answers with the earlier invoice whatever the body says now (even another amount).
    const priorId = key === null ? undefined : invoiceKeys.get(key);
    if (priorId !== undefined) {
      const call = recordCreate(key, 'replayed', priorId);
      return created(call, 200, { ...state.invoiceJson(state.get(priorId)), idempotentReplay: true });
    }
    const fields = orInvalid(key, () => parseCreateBody(request.body));
    const invoice = state.create(key, request.body, fields);
    if (key !== null) invoiceKeys.set(key, invoice.id);
    return created(recordCreate(key, 'created', invoice.id), 201, state.invoiceJson(invoice));
  }

  function invoiceParam(request: FastifyRequest): string {
    return (request.params as { id: string }).id;
  }

  function createRefund(request: FastifyRequest): ApiResult {
    requireApiKey(request);
    const invoice = state.get(invoiceParam(request));
    const key = readIdempotencyKey(request.headers, true)!;
    const prior = refundKeys.get(key);
    if (prior) {
      if (prior.invoiceId !== invoice.id)
        throw new SimHttpError(409, 'idempotency_conflict', `Idempotency-Key ${key} was already used for invoice ${prior.invoiceId}`);
      const refund = invoice.refunds.find((r) => r.id === prior.refundId)!;
      return { status: 200, body: { id: refund.id, status: refund.status } };
    }
    const body = checkObjectBody(request.body, ['amount']);
    if (!isPositiveInteger(body.amount)) throw new SimHttpError(400, 'invalid_request', 'amount: a positive integer is required');
    if (invoice.status !== 'paid' && invoice.status !== 'partially_refunded') {
      throw new SimHttpError(400, 'invalid_state', `invoice ${invoice.id} is ${invoice.status}; only paid invoices can be refunded`);
    }
    const remaining = state.remainingRefundable(invoice);
    if (body.amount > remaining)
      throw new SimHttpError(400, 'invalid_request', `amount ${body.amount} exceeds the refundable remainder ${remaining}`);

    if (ctx.faultRandom.chance(ctx.faults().refundUnknown)) {
      // The bank did not tell QutPay in time: the money may or may not have moved.
      const happened = ctx.faultRandom.chance(0.5);
      const pending = ctx.faultRandom.chance(0.5);
      const code = pending ? 'refund_pending_unknown' : 'refund_unknown';
      const httpStatus = pending ? 504 : 502;
      let refundId: string | undefined;
      if (happened) {
        refundId = state.refund(invoice, body.amount, key, code).id;
        refundKeys.set(key, { invoiceId: invoice.id, refundId });
      }
      ctx.records.refundUnknown.push({
        invoiceId: invoice.id,
        idempotencyKey: key,
        amount: body.amount,
        happened,
        code,
        httpStatus,
        at: ctx.clock.now(),
        ...(refundId ? { refundId } : {}),
      });
      throw new SimHttpError(httpStatus, code, 'the outcome of the refund is unknown: read the invoice, do not retry');
    }
    const refund = state.refund(invoice, body.amount, key);
    refundKeys.set(key, { invoiceId: invoice.id, refundId: refund.id });
    return { status: 201, body: { id: refund.id, status: refund.status } };
  }

  const routes: ApiRoute[] = [
    createRoute('/api/v1/invoices', createInvoice),
    // `?live=true` asks the bank instead of the cache; here both are the same.
    readRoute('/api/v1/invoices/:id', requireApiKey, (id) => state.invoiceWithRefunds(state.get(id))),
    {
      method: 'POST',
      url: '/api/v1/invoices/:id/cancel',
      handler: (request) => {
        requireApiKey(request);
        const invoice = state.get(invoiceParam(request));
        checkObjectBody(request.body ?? {}, []);
        return { status: 200, body: state.invoiceWithRefunds(state.cancel(invoice)) };
      },
    },
    { method: 'POST', url: '/api/v1/invoices/:id/refund', handler: createRefund },
  ];

  return {
    maxAttempts: options.maxAttempts,
    errorBody: (code, message) => ({ error: code, message }),
    routes: () => routes,
    sweep: state.sweep,
    pay: state.pay,
    expire: state.expire,
    fail: state.fail,
    revokeTokens: () => undefined,
    refundOutside: (id, amount) => {
      const invoice = state.get(id);
      if (invoice.status !== 'paid' && invoice.status !== 'partially_refunded')
        throw new SimHttpError(400, 'invalid_state', `invoice ${id} is ${invoice.status}; only paid invoices can be refunded`);
      if (amount > state.remainingRefundable(invoice))
        throw new SimHttpError(400, 'invalid_request', `amount ${amount} exceeds the refundable remainder`);
      state.refund(invoice, amount, `dashboard-${ctx.ids.token(12)}`);
    },
    answerReadsWith,
    view: state.view,
    webhookHeaders: (event) => ({
      'content-type': 'application/json',
      'x-qutpay-signature': signQutpayWebhook(options.webhookSecret, event.body),
    }),
  };
}
