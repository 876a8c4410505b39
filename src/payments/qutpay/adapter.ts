/**
 * QutPay invoices behind the PaymentProvider contract. QutPay has no currency field and no manual
 * capture; the configured device currency is reported, and a capture is refused.
 */
import {
  ProviderError,
  type CreateInvoiceRequest,
  type Invoice,
  type PaymentProvider,
  type RefundRequest,
  type RefundResult,
} from '../types.js';
import { createProviderHttpClient, parseWire, type HttpClientDeps, type HttpRequest, type HttpResponse } from '../http.js';
import { expectInvoice, findInvoiceMismatch, validateCreateRequest, withRefunds } from '../invoice-checks.js';
import { sendRefund } from '../refund.js';
import { mapQutpayRefundStatus, mapQutpayStatus } from './status.js';
import { qutpayInvoiceSchema, qutpayRefundSchema, type QutpayInvoice } from './wire.js';
import { verifyQutpayWebhook } from './webhook.js';

export interface QutpayConfig {
  baseUrl: string;
  apiKey: string;
  /** ISO 4217, from `device.currency`: QutPay invoices carry none. */
  currency: string;
  requestTimeoutMs: number;
  createDeadlineMs: number;
}

/** An id no invoice will ever have: 404 proves the key was accepted, 401 that it was not. */
const PROBE_INVOICE_ID = 'inv_vendgate_credentials_check';
/** QutPay says these (HTTP 502/504) when it cannot tell whether the money moved. */
const REFUND_UNKNOWN_CODES = ['refund_unknown', 'refund_pending_unknown'];

export function createQutpayProvider(deps: HttpClientDeps, config: QutpayConfig): PaymentProvider {
  const log = deps.logger.child({ module: 'payments', provider: 'qutpay' });
  const http = createProviderHttpClient({ ...deps, logger: log }, { provider: 'qutpay', ...config });
  const warnedStatuses = new Set<string>();
  // Older responses may lack `livemode`; the key's prefix says which environment it belongs to.
  const keyIsLive = config.apiKey.startsWith('qp_live_');

  function call(request: HttpRequest): Promise<HttpResponse> {
    return http.request({ ...request, headers: { ...request.headers, 'x-api-key': config.apiKey } });
  }

  function toInvoice(body: unknown, what: string): Invoice {
    const invoice = parseWire(qutpayInvoiceSchema, body, what);
    const refundedAmount = (invoice.refunds ?? []).filter((r) => r.status === 'succeeded').reduce((sum, r) => sum + r.amount, 0);
    return {
      id: invoice.id,
      status: withRefunds(canonical(invoice), invoice.amount, refundedAmount),
      refundedAmount,
      ...(invoice.description !== undefined ? { description: invoice.description } : {}),
      providerStatus: invoice.status,
      amount: invoice.amount,
      currency: config.currency,
      reference: invoice.externalOrderId,
      livemode: invoice.livemode ?? keyIsLive,
      payUrl: invoice.payUrl ?? '',
      expiresAt: Date.parse(invoice.expiresAt),
    };
  }

  function canonical(invoice: QutpayInvoice) {
    const status = mapQutpayStatus(invoice.status);
    if (status !== undefined) return status;
    if (!warnedStatuses.has(invoice.status)) {
      warnedStatuses.add(invoice.status);
      log.warn({ providerStatus: invoice.status, invoiceId: invoice.id }, 'unknown provider status, treated as pending');
    }
    return 'pending';
  }

  async function invoiceCall(method: 'GET' | 'POST', invoiceId: string, suffix: string, what: string): Promise<Invoice> {
    const response = await call({ method, path: `/api/v1/invoices/${encodeURIComponent(invoiceId)}${suffix}`, retry: 'read' });
    return expectInvoice(invoiceId, toInvoice(response.body, what), what);
  }

  return {
    name: 'qutpay',

    async createInvoice(request: CreateInvoiceRequest): Promise<Invoice> {
      validateCreateRequest(request);
      if (request.captureMode === 'manual') {
        throw new ProviderError('rejected', 'qutpay has no manual capture: set provider.captureMode to automatic');
      }
      const response = await call({
        method: 'POST',
        path: '/api/v1/invoices',
        headers: { 'idempotency-key': request.idempotencyKey },
        json: { amount: request.amount, description: request.description, externalOrderId: request.reference },
        retry: 'create',
      });
      const invoice = toInvoice(response.body, 'qutpay create invoice');
      const replay = (response.body as { idempotentReplay?: unknown }).idempotentReplay === true || response.status === 200;
      if (replay) invoice.replayed = true;
      // QutPay replays an old key even when the amount differs: say so loudly, return it faithfully.
      const mismatches = findInvoiceMismatch(request, invoice);
      if (mismatches.length > 0)
        log.warn({ invoiceId: invoice.id, reference: request.reference, mismatches }, 'created invoice differs from the request');
      return invoice;
    },

    getInvoice: (invoiceId) => invoiceCall('GET', invoiceId, '', 'qutpay get invoice'),
    cancelInvoice: (invoiceId) => invoiceCall('POST', invoiceId, '/cancel', 'qutpay cancel invoice'),

    async captureInvoice(invoiceId: string): Promise<Invoice> {
      throw new ProviderError('rejected', `qutpay has no manual capture (invoice ${invoiceId}): use provider.captureMode automatic`);
    },

    refund(request: RefundRequest): Promise<RefundResult> {
      return sendRefund(log, request, {
        send: () =>
          call({
            method: 'POST',
            path: `/api/v1/invoices/${encodeURIComponent(request.invoiceId)}/refund`,
            headers: { 'idempotency-key': request.idempotencyKey },
            json: { amount: request.amount },
            retry: 'none',
          }),
        schema: qutpayRefundSchema,
        mapStatus: mapQutpayRefundStatus,
        unknownCodes: REFUND_UNKNOWN_CODES,
        what: 'qutpay refund',
      });
    },

    verifyWebhook: (rawBody, headers, context) => verifyQutpayWebhook(rawBody, headers, context),

    async checkCredentials() {
      const response = await call({ method: 'GET', path: `/api/v1/invoices/${PROBE_INVOICE_ID}`, retry: 'read', okStatuses: [404] });
      const date = Date.parse(response.headers.get('date') ?? '');
      return {
        detail: `API key accepted (probe read answered HTTP ${response.status})`,
        ...(Number.isNaN(date) ? {} : { serverDate: date }),
      };
    },
  };
}
