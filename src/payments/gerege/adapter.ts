/**
 * Gerege payment intents behind the PaymentProvider contract. Translates, never decides: every
 * provider word becomes a canonical status here and nowhere else.
 */
import {
  ProviderError,
  type CreateInvoiceRequest,
  type EventPage,
  type Invoice,
  type PaymentProvider,
  type RefundRequest,
  type RefundResult,
} from '../types.js';
import { createProviderHttpClient, parseWire, type HttpClientDeps, type HttpRequest, type HttpResponse } from '../http.js';
import { expectInvoice, findInvoiceMismatch, validateCreateRequest, withRefunds } from '../invoice-checks.js';
import { sendRefund } from '../refund.js';
import { mapGeregeRefundStatus, mapGeregeStatus } from './status.js';
import { createTokenSource } from './token.js';
import { geregeEventListSchema, geregeIntentSchema, geregeRefundSchema, type GeregeIntent } from './wire.js';
import { parseGeregeEvent, verifyGeregeWebhook } from './webhook.js';

export interface GeregeConfig {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  requestTimeoutMs: number;
  createDeadlineMs: number;
  /** OAuth2 scope to ask for (the relay's lookup key: payments:read); none: the client's default. */
  scope?: string;
}

/** An id no intent will ever have: a GET of it proves the token is accepted without creating anything. */
const PROBE_INTENT_ID = 'pi_vendgate_credentials_check';
const EVENTS_PAGE_SIZE = 100;

export function createGeregeProvider(deps: HttpClientDeps, config: GeregeConfig): PaymentProvider {
  const log = deps.logger.child({ module: 'payments', provider: 'gerege' });
  const http = createProviderHttpClient({ ...deps, logger: log }, { provider: 'gerege', ...config });
  const tokens = createTokenSource({ http, clock: deps.clock }, config);
  const warnedStatuses = new Set<string>();

  /** Sends with a bearer token; a 401 refreshes the token once and repeats the same request. */
  async function authed(request: HttpRequest): Promise<HttpResponse> {
    const token = await tokens.get();
    try {
      return await http.request(withBearer(request, token));
    } catch (err) {
      if (!(err instanceof ProviderError && err.httpStatus === 401)) throw err;
      tokens.invalidate(token);
      log.info({ path: request.path }, 'bearer token refused, refreshing once');
      return http.request(withBearer(request, await tokens.get()));
    }
  }

  function toInvoice(body: unknown, what: string): Invoice {
    const intent = parseWire(geregeIntentSchema, body, what);
    const refundedAmount = intent.amount_refunded ?? 0;
    return {
      id: intent.id,
      // An intent stays `succeeded` after a refund (refunds are `re_` objects): its refunds say more.
      status: withRefunds(canonical(intent), intent.amount, refundedAmount),
      providerStatus: intent.status,
      amount: intent.amount,
      currency: intent.currency,
      reference: intent.reference,
      livemode: intent.livemode,
      payUrl: intent.pay_url ?? '',
      expiresAt: intent.expires_at * 1_000,
      refundedAmount,
      ...(intent.created !== undefined ? { createdAt: intent.created * 1_000 } : {}),
      ...(intent.description !== undefined ? { description: intent.description } : {}),
    };
  }

  function canonical(intent: GeregeIntent) {
    const status = mapGeregeStatus(intent.status);
    if (status !== undefined) return status;
    if (!warnedStatuses.has(intent.status)) {
      warnedStatuses.add(intent.status);
      log.warn({ providerStatus: intent.status, invoiceId: intent.id }, 'unknown provider status, treated as pending');
    }
    return 'pending';
  }

  async function intentCall(method: 'GET' | 'POST', invoiceId: string, suffix: string, what: string): Promise<Invoice> {
    const response = await authed({ method, path: `/payment-intents/${encodeURIComponent(invoiceId)}${suffix}`, retry: 'read' });
    return expectInvoice(invoiceId, toInvoice(response.body, what), what);
  }

  return {
    name: 'gerege',

    async createInvoice(request: CreateInvoiceRequest): Promise<Invoice> {
      validateCreateRequest(request);
      const response = await authed({
        method: 'POST',
        path: '/payment-intents',
        headers: { 'idempotency-key': request.idempotencyKey },
        // Field order is the wire format's; Gerege compares normalised JSON, but byte-identical retries are cheaper to reason about.
        json: {
          amount: request.amount,
          currency: request.currency,
          reference: request.reference,
          description: request.description,
          capture_method: request.captureMode,
          expires_in: request.expiresInSec,
        },
        retry: 'create',
        // One deadline for the whole create, including a repeat after a token refresh.
        deadlineAt: deps.clock.now() + config.createDeadlineMs,
      });
      const invoice = toInvoice(response.body, 'gerege create payment intent');
      if (response.status === 200) invoice.replayed = true;
      const mismatches = findInvoiceMismatch(request, invoice);
      if (mismatches.length > 0)
        log.warn({ invoiceId: invoice.id, reference: request.reference, mismatches }, 'created intent differs from the request');
      return invoice;
    },

    getInvoice: (invoiceId) => intentCall('GET', invoiceId, '', 'gerege get payment intent'),
    cancelInvoice: (invoiceId) => intentCall('POST', invoiceId, '/cancel', 'gerege cancel payment intent'),
    captureInvoice: (invoiceId) => intentCall('POST', invoiceId, '/capture', 'gerege capture payment intent'),

    refund(request: RefundRequest): Promise<RefundResult> {
      return sendRefund(log, request, {
        send: () =>
          authed({
            method: 'POST',
            path: `/payment-intents/${encodeURIComponent(request.invoiceId)}/refunds`,
            headers: { 'idempotency-key': request.idempotencyKey },
            json: { amount: request.amount },
            retry: 'none',
          }),
        schema: geregeRefundSchema,
        mapStatus: mapGeregeRefundStatus,
        what: 'gerege refund',
      });
    },

    /**
     * Gerege answers the same Idempotency-Key and body with the same `re_…` object, never a second
     * refund (docs/providers.md, "Gerege"), and its intent stays `succeeded` after a refund: asking again is the only
     * way to learn what happened to a refund whose answer was lost.
     */
    confirmRefund(request: RefundRequest): Promise<RefundResult> {
      return this.refund(request);
    },

    verifyWebhook: (rawBody, headers, context) => verifyGeregeWebhook(rawBody, headers, context),

    async listEvents(query): Promise<EventPage> {
      const response = await authed({
        method: 'GET',
        path: '/events',
        query: { created_after: query.createdAfterSec, limit: EVENTS_PAGE_SIZE, starting_after: query.startingAfter },
        retry: 'read',
      });
      const page = parseWire(geregeEventListSchema, response.body, 'gerege list events');
      const events = page.data.map((item, index) => {
        const event = parseGeregeEvent(item);
        // Without an id the caller could neither dedupe nor page past it.
        if (!event) throw new ProviderError('malformed', `gerege list events: item ${index} is not an event with an id and a type`);
        return { event, rawBody: Buffer.from(JSON.stringify(item), 'utf8') };
      });
      return { events, hasMore: page.has_more };
    },

    async checkCredentials() {
      const response = await authed({
        method: 'GET',
        path: `/payment-intents/${PROBE_INTENT_ID}`,
        retry: 'read',
        okStatuses: [404],
      });
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
