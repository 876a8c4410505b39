/**
 * QPay v2 invoices behind the PaymentProvider contract (docs/providers.md, "QPay"). What differs
 * from the other adapters, and why:
 *
 * - Create is not known to be idempotent at QPay, and QPay documents no read by our number. So a
 *   number (`sender_invoice_no`, from the attempt's stored key) is sent once: a 429 or a 401 (QPay
 *   did not take it) may be sent again, anything that leaves the outcome open (no answer, 5xx, an
 *   unreadable 2xx) never is. The order then fails with "try again"; the next order has a new key,
 *   so a new number. An invoice whose answer was lost was never shown, so nobody can pay it.
 * - Money is read from `payment/check` (the payment rows), never from a callback: callbacks are
 *   unsigned hints that cause that read (callback.ts).
 * - A refund returns a whole payment (`DELETE /v2/payment/refund/{payment_id}` carries no amount).
 */
import {
  ProviderError,
  type CreateInvoiceRequest,
  type Invoice,
  type PaymentProvider,
  type RefundRequest,
  type RefundResult,
} from '../types.js';
import { sleep as realSleep } from '../../util/clock.js';
import { createProviderHttpClient, parseWire, type HttpClientDeps, type HttpRequest, type HttpResponse } from '../http.js';
import { validateCreateRequest, withRefunds } from '../invoice-checks.js';
import { createQpayTokenSource } from './token.js';
import { senderInvoiceNo } from './number.js';
import { callbackUrlFor, deviceHint, readCallbackReference } from './callback.js';
import { mapQpayInvoiceStatus, mapQpayPaymentStatus } from './status.js';
import { qpayCreatedSchema, qpayInvoiceSchema, qpayPaymentCheckSchema, type QpayInvoice, type QpayPaymentCheck } from './wire.js';
import { createQpayMemory } from './memory.js';
import { decideQpayRefund, sendQpayRefund } from './refund.js';

export interface QpayConfig {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** Assigned by QPay to the merchant. */
  invoiceCode: string;
  /** Who the invoice is addressed to; QPay's examples use `terminal` for a point of sale. */
  invoiceReceiverCode: string;
  senderBranchCode?: string;
  /** The public URL QPay calls after a payment (the tunnel's or the fleet relay's `/webhooks/qpay`). */
  callbackUrl: string;
  /** ISO 4217 from `device.currency`: QPay's invoice carries none (payment rows say MNT). */
  currency: string;
  /** True only against QPay's production host. */
  livemode: boolean;
  requestTimeoutMs: number;
  createDeadlineMs: number;
}

/** An id no invoice will ever have: 404 proves the token is accepted without creating anything. */
const PROBE_INVOICE_ID = 'vendgate-credentials-check';
const MONEY_WORDS = new Set(['PAID', 'PARTIAL', 'REFUNDED']);

export function createQpayProvider(deps: HttpClientDeps, config: QpayConfig): PaymentProvider {
  const log = deps.logger.child({ module: 'payments', provider: 'qpay' });
  const http = createProviderHttpClient({ ...deps, logger: log }, { provider: 'qpay', ...config });
  const tokens = createQpayTokenSource({ http, clock: deps.clock }, config);
  const sleep = deps.sleep ?? ((ms: number) => realSleep(ms));
  const memory = createQpayMemory();
  const warned = new Set<string>();

  /** Sends with a bearer token; a 401 renews the token once and repeats (QPay did not take the call). */
  async function authed(request: HttpRequest): Promise<HttpResponse> {
    const token = await tokens.get();
    try {
      return await http.request(withBearer(request, token));
    } catch (err) {
      if (!(err instanceof ProviderError && err.httpStatus === 401)) throw err;
      tokens.invalidate(token);
      log.info({ path: request.path }, 'bearer token refused, renewing once');
      return http.request(withBearer(request, await tokens.get()));
    }
  }

  function warnOnce(word: string, invoiceId: string): void {
    if (warned.has(word)) return;
    warned.add(word);
    log.warn({ providerStatus: word, invoiceId }, 'unknown QPay status word, read as not paid');
  }

  async function paymentCheck(invoiceId: string): Promise<QpayPaymentCheck> {
    const response = await authed({
      method: 'POST',
      path: '/v2/payment/check',
      json: { object_type: 'INVOICE', object_id: invoiceId },
      retry: 'read',
    });
    const check = parseWire(qpayPaymentCheckSchema, response.body, 'qpay payment check');
    memory.rowsRead(invoiceId, check);
    return check;
  }

  /**
   * The payment rows a refund is planned from: read now; when QPay cannot be read this moment, the
   * rows this process read last (the core refunds only what a read showed paid, and QPay refuses to
   * return a payment twice). Never a guess: with neither, the refund is not sent.
   */
  async function rowsForRefund(invoiceId: string): Promise<QpayPaymentCheck> {
    try {
      return await paymentCheck(invoiceId);
    } catch (err) {
      const last = memory.lastRows(invoiceId);
      if (!(err instanceof ProviderError && err.transient) || !last) throw err;
      log.warn({ invoiceId, kind: err.kind }, 'QPay payment check failed before a refund: planning from the last read');
      return last;
    }
  }

  function toInvoice(invoice: QpayInvoice, check: QpayPaymentCheck): Invoice {
    const id = invoice.invoice_id;
    for (const row of check.rows) if (mapQpayPaymentStatus(row.payment_status) === undefined) warnOnce(row.payment_status, id);
    const moneyRows = check.rows.filter((row) => MONEY_WORDS.has(row.payment_status));
    const taken = moneyRows.reduce((sum, row) => sum + row.payment_amount, 0);
    const refunded = moneyRows.filter((row) => row.payment_status === 'REFUNDED').reduce((sum, row) => sum + row.payment_amount, 0);
    const known = memory.invoice(id);
    const invoiceAmount = invoice.amount ?? invoice.total_amount ?? known?.amount ?? 0;
    let status: Invoice['status'];
    let word: string;
    if (moneyRows.some((row) => row.payment_status === 'PAID')) {
      status = withRefunds('paid', taken, refunded);
      word = 'PAID';
    } else if (moneyRows.some((row) => row.payment_status === 'PARTIAL')) {
      status = 'partially_refunded';
      word = 'PARTIAL';
    } else if (moneyRows.length > 0) {
      status = 'refunded';
      word = 'REFUNDED';
    } else {
      const mapped = mapQpayInvoiceStatus(invoice.invoice_status);
      if (mapped === undefined) warnOnce(invoice.invoice_status, id);
      status = mapped ?? 'pending';
      word = invoice.invoice_status;
    }
    return {
      id,
      status,
      providerStatus: word,
      // What was taken, once anything was: another sum than the invoice's is the core's to see.
      amount: moneyRows.length > 0 ? taken : invoiceAmount,
      currency: config.currency,
      reference: known?.reference ?? referenceInUrl(invoice.callback_url) ?? invoice.sender_invoice_no ?? '',
      livemode: config.livemode,
      payUrl: known?.payUrl ?? '',
      expiresAt: known?.expiresAt ?? deps.clock.now(),
      refundedAmount: refunded,
      ...(invoice.invoice_description !== undefined ? { description: invoice.invoice_description } : {}),
    };
  }

  async function read(invoiceId: string): Promise<Invoice> {
    const response = await authed({ method: 'GET', path: `/v2/invoice/${encodeURIComponent(invoiceId)}`, retry: 'read' });
    const invoice = parseWire(qpayInvoiceSchema, response.body, 'qpay get invoice');
    if (invoice.invoice_id !== invoiceId) {
      throw new ProviderError('malformed', `qpay get invoice: asked for ${invoiceId}, the answer is about ${invoice.invoice_id}`);
    }
    return toInvoice(invoice, await paymentCheck(invoiceId));
  }

  /** One create call for one number. Throws with the outcome named; never sends the number twice after an open outcome. */
  async function create(request: CreateInvoiceRequest): Promise<Invoice> {
    const number = senderInvoiceNo(request.idempotencyKey);
    const deadlineAt = deps.clock.now() + config.createDeadlineMs;
    const body = {
      invoice_code: config.invoiceCode,
      sender_invoice_no: number,
      invoice_receiver_code: config.invoiceReceiverCode,
      invoice_description: request.description,
      ...(config.senderBranchCode ? { sender_branch_code: config.senderBranchCode } : {}),
      amount: request.amount,
      callback_url: callbackUrlFor(config.callbackUrl, request.reference),
    };
    log.info({ reference: request.reference, senderInvoiceNo: number }, 'creating QPay invoice');
    let response: HttpResponse;
    for (;;) {
      try {
        response = await authed({ method: 'POST', path: '/v2/invoice', json: body, retry: 'none', deadlineAt });
        break;
      } catch (err) {
        if (err instanceof ProviderError && err.kind === 'rate_limited') {
          // Refused before it was taken: the same number may go again, within the create's deadline.
          const wait = Math.max(err.retryAfterMs ?? 1_000, 250);
          if (deps.clock.now() + wait >= deadlineAt) throw err;
          await sleep(wait);
          continue;
        }
        throw createFailure(err, request, number);
      }
    }
    let created;
    try {
      created = parseWire(qpayCreatedSchema, response.body, 'qpay create invoice');
    } catch (err) {
      memory.numberInDoubt(request.idempotencyKey);
      throw err;
    }
    const expiresAt = deps.clock.now() + request.expiresInSec * 1_000;
    memory.remember(created.invoice_id, { reference: request.reference, amount: request.amount, payUrl: created.qr_text, expiresAt });
    return {
      id: created.invoice_id,
      status: 'pending',
      providerStatus: 'OPEN',
      amount: request.amount,
      currency: config.currency,
      reference: request.reference,
      livemode: config.livemode,
      payUrl: created.qr_text,
      expiresAt,
      refundedAmount: 0,
      description: request.description,
      ...(created.urls && created.urls.length > 0 ? { appLinks: created.urls.map((u) => ({ name: u.name, link: u.link })) } : {}),
    };
  }

  function createFailure(err: unknown, request: CreateInvoiceRequest, number: string): unknown {
    if (!(err instanceof ProviderError)) return err;
    if (err.transient || err.kind === 'malformed') {
      memory.numberInDoubt(request.idempotencyKey);
      log.warn(
        { reference: request.reference, senderInvoiceNo: number, kind: err.kind },
        'QPay create outcome unknown: this number is not sent again',
      );
      return new ProviderError(
        err.kind,
        `${err.message} (the outcome is unknown: the number ${number} is not sent again; a new order gets a new one)`,
        {
          httpStatus: err.httpStatus,
          providerCode: err.providerCode,
          cause: err,
        },
      );
    }
    // A refusal (a duplicate number, a bad invoice_code) is not an idempotency conflict of ours.
    return err.kind === 'conflict'
      ? new ProviderError('rejected', err.message, { httpStatus: err.httpStatus, providerCode: err.providerCode, cause: err })
      : err;
  }

  return {
    name: 'qpay',

    async createInvoice(request: CreateInvoiceRequest): Promise<Invoice> {
      validateCreateRequest(request);
      if (request.captureMode === 'manual') {
        throw new ProviderError('rejected', 'qpay has no manual capture: set provider.captureMode to automatic');
      }
      if (memory.isInDoubt(request.idempotencyKey)) {
        throw new ProviderError(
          'processing',
          `qpay create: the answer for ${senderInvoiceNo(request.idempotencyKey)} was lost earlier and QPay has no read by number; it is not sent again (a new order gets a new number)`,
        );
      }
      const earlier = memory.created(request.idempotencyKey);
      if (earlier) {
        // The same attempt asked again (a double press, a retry): the invoice made once, read now.
        const first = await earlier;
        const now = await read(first.id);
        return {
          ...now,
          payUrl: first.payUrl,
          expiresAt: first.expiresAt,
          ...(first.appLinks ? { appLinks: first.appLinks } : {}),
          replayed: true,
        };
      }
      const pending = create(request);
      memory.creating(request.idempotencyKey, pending);
      return pending;
    },

    getInvoice: (invoiceId) => read(invoiceId),

    async cancelInvoice(invoiceId: string): Promise<Invoice> {
      try {
        await authed({ method: 'DELETE', path: `/v2/invoice/${encodeURIComponent(invoiceId)}`, retry: 'read' });
      } catch (err) {
        // A paid or already closed invoice refuses the delete: the read below says which.
        if (!(err instanceof ProviderError && err.kind === 'rejected')) throw err;
        log.info({ invoiceId, detail: err.message }, 'QPay refused the cancel; reading the invoice');
      }
      return read(invoiceId);
    },

    async captureInvoice(invoiceId: string): Promise<Invoice> {
      throw new ProviderError('rejected', `qpay has no manual capture (invoice ${invoiceId}): use provider.captureMode automatic`);
    },

    async refund(request: RefundRequest): Promise<RefundResult> {
      const plan = decideQpayRefund(request, await rowsForRefund(request.invoiceId));
      if (plan.kind === 'done') return plan.result;
      return sendQpayRefund(log, request, plan.paymentId, { authed, paymentCheck });
    },

    verifyWebhook(_rawBody, headers, context) {
      const reference = readCallbackReference(headers);
      // QPay signs nothing: the callback's token is checked against the client secret, not a webhook secret.
      return { event: deviceHint(reference, memory.invoiceOf(reference), context.now, config.clientSecret), secretIndex: 0 };
    },

    async checkCredentials() {
      const response = await authed({ method: 'GET', path: `/v2/invoice/${PROBE_INVOICE_ID}`, retry: 'read', okStatuses: [404] });
      const date = Date.parse(response.headers.get('date') ?? '');
      return {
        detail: `token issued and accepted (probe read answered HTTP ${response.status})`,
        ...(Number.isNaN(date) ? {} : { serverDate: date }),
      };
    },
  };
}

function withBearer(request: HttpRequest, token: string): HttpRequest {
  return { ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } };
}

function referenceInUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).searchParams.get('ref') ?? undefined;
  } catch {
    return undefined;
  }
}
