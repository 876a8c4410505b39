/**
 * Kaspi QR behind the PaymentProvider contract (docs/providers.md, "Kaspi QR"). Kaspi takes calls
 * only from whitelisted addresses with a client certificate, which a Pi behind a mobile router
 * cannot have: this adapter never talks to Kaspi. It talks to the operator's fleet relay
 * (`vendgate relay`, its Kaspi caller), signing every request with this device's own secret; the
 * relay holds the certificate and this device's Kaspi device token and calls Kaspi for it.
 *
 * - Create: the order's `ExternalId` is the attempt's stored key (so it is on disk before any call).
 *   Kaspi's create is not known to be idempotent, so the relay writes the ExternalId to its journal
 *   before it calls Kaspi and answers a repeat of it from the journal: the same QR when Kaspi
 *   answered, `create_in_doubt` when Kaspi's answer was lost (that ExternalId is never sent to
 *   Kaspi again; the order fails with "try again" and the next order has a new ExternalId). So this
 *   adapter may repeat its own create to the relay after a lost answer: the repeat is a read.
 * - No webhooks: the core polls (`poll.intervalMs`, 2–5 s while a QR is open, as Kaspi asks).
 * - The relay down: no new order (the create fails with "the payment service is not reachable");
 *   an open QR keeps being read when it comes back; nothing is cancelled or refunded on a guess.
 */
import {
  ProviderError,
  WebhookVerificationError,
  type CreateInvoiceRequest,
  type Invoice,
  type PaymentProvider,
  type RefundRequest,
  type RefundResult,
} from '../types.js';
import { createProviderHttpClient, parseWire, type HttpClientDeps, type HttpRequest, type HttpResponse } from '../http.js';
import { validateCreateRequest, withRefunds } from '../invoice-checks.js';
import { signKaspiRelayRequest } from './relay-auth.js';
import { mapKaspiStatus } from './status.js';
import {
  KASPI_RELAY_ERRORS,
  kaspiExternalId,
  relayPaymentSchema,
  relayPingSchema,
  relayQrSchema,
  relayReturnSchema,
  type RelayPayment,
  type RelayQr,
} from './wire.js';

export interface KaspiConfig {
  /** The fleet relay's Kaspi listener, e.g. https://relay.example.com:8789 */
  relayUrl: string;
  /** This device's id: the relay knows its secret and its Kaspi device token by it. */
  deviceId: string;
  /** The secret the operator provisioned for this device at the relay (VENDGATE_PROVIDER_CLIENT_SECRET). */
  relaySecret: string;
  /** Kaspi charges in tenge: device.currency must be KZT. */
  currency: string;
  requestTimeoutMs: number;
  createDeadlineMs: number;
}

const MAX_REMEMBERED = 1_000;
const REFUND_UNKNOWN_KINDS: readonly string[] = ['network', 'timeout', 'server', 'malformed', 'processing'];

export function createKaspiProvider(deps: HttpClientDeps, config: KaspiConfig): PaymentProvider {
  const log = deps.logger.child({ module: 'payments', provider: 'kaspi' });
  const http = createProviderHttpClient(
    { ...deps, logger: log },
    { provider: 'kaspi', baseUrl: config.relayUrl, requestTimeoutMs: config.requestTimeoutMs, createDeadlineMs: config.createDeadlineMs },
  );
  const basePath = new URL(config.relayUrl).pathname.replace(/\/+$/, '');
  const creates = new Map<string, Promise<Invoice>>();
  const shown = new Map<string, { payUrl: string; expiresAt: number }>();
  const warned = new Set<string>();

  function remember<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > MAX_REMEMBERED) map.delete(map.keys().next().value as string);
  }

  /** Every call is signed with this device's secret over the exact bytes sent. */
  function send(request: HttpRequest): Promise<HttpResponse> {
    const body = request.json === undefined ? '' : JSON.stringify(request.json);
    const headers = signKaspiRelayRequest(config.relaySecret, {
      deviceId: config.deviceId,
      method: request.method,
      pathWithQuery: basePath + request.path,
      body,
      nowMs: deps.clock.now(),
    });
    return http.request({ ...request, headers: { ...request.headers, ...headers } });
  }

  function fromQr(qr: RelayQr, request: CreateInvoiceRequest): Invoice {
    const expiresAt = deps.clock.now() + qr.expiresInSec * 1_000;
    remember(shown, qr.qrPaymentId, { payUrl: qr.qrToken, expiresAt });
    return {
      id: qr.qrPaymentId,
      status: 'pending',
      providerStatus: 'QrTokenCreated',
      amount: qr.amount,
      currency: config.currency,
      reference: qr.reference,
      livemode: qr.livemode,
      payUrl: qr.qrToken,
      expiresAt,
      refundedAmount: 0,
      description: request.description,
      ...(qr.replayed ? { replayed: true } : {}),
    };
  }

  function fromPayment(payment: RelayPayment): Invoice {
    let status = mapKaspiStatus(payment.status);
    if (status === undefined) {
      if (!warned.has(payment.status)) {
        warned.add(payment.status);
        log.warn({ providerStatus: payment.status, invoiceId: payment.qrPaymentId }, 'unknown Kaspi status word, read as not paid');
      }
      status = 'pending';
    }
    // Paid with nothing paid is no payment: malformed (the poller reads again), never vended or refunded.
    if (status === 'paid' && payment.amount <= 0)
      throw new ProviderError('malformed', `kaspi relay read of ${payment.qrPaymentId}: ${payment.status} with amount ${payment.amount}`);
    const known = shown.get(payment.qrPaymentId);
    return {
      id: payment.qrPaymentId,
      status: withRefunds(status, payment.amount, payment.returnedAmount),
      providerStatus: payment.status,
      amount: payment.amount,
      currency: config.currency,
      reference: payment.reference,
      livemode: payment.livemode,
      payUrl: known?.payUrl ?? '',
      expiresAt: known?.expiresAt ?? deps.clock.now() + payment.expiresInSec * 1_000,
      refundedAmount: payment.returnedAmount,
    };
  }

  async function read(invoiceId: string): Promise<Invoice> {
    checkId(invoiceId);
    let response: HttpResponse;
    try {
      response = await send({ method: 'GET', path: `/kaspi/v1/payments/${invoiceId}`, retry: 'read' });
    } catch (err) {
      // The relay found Kaspi's answer to be about another QR: as malformed as if this adapter had found it.
      if (err instanceof ProviderError && err.providerCode === KASPI_RELAY_ERRORS.malformed)
        throw new ProviderError('malformed', `kaspi relay read of ${invoiceId}: ${err.message}`, {
          httpStatus: err.httpStatus,
          providerCode: err.providerCode,
          cause: err,
        });
      throw err;
    }
    const payment = parseWire(relayPaymentSchema, response.body, 'kaspi relay read');
    if (payment.qrPaymentId !== invoiceId)
      throw new ProviderError('malformed', `kaspi relay read: asked for ${invoiceId}, the answer is about ${payment.qrPaymentId}`);
    return fromPayment(payment);
  }

  async function create(request: CreateInvoiceRequest): Promise<Invoice> {
    const externalId = kaspiExternalId(request.idempotencyKey);
    log.info({ reference: request.reference, externalId }, 'creating Kaspi QR through the relay');
    let response: HttpResponse;
    try {
      // Safe to repeat: the relay answers a repeated ExternalId from its journal and never sends it to Kaspi twice.
      response = await send({
        method: 'POST',
        path: '/kaspi/v1/qr',
        json: { externalId, reference: request.reference, amount: request.amount },
        retry: 'create',
      });
    } catch (err) {
      if (err instanceof ProviderError && err.providerCode === KASPI_RELAY_ERRORS.inDoubt) {
        throw new ProviderError(
          'processing',
          `kaspi create: Kaspi's answer for ExternalId ${externalId} was lost at the relay; it is not sent again (a new order gets a new ExternalId)`,
          { httpStatus: err.httpStatus, providerCode: err.providerCode, cause: err },
        );
      }
      throw err;
    }
    const qr = parseWire(relayQrSchema, response.body, 'kaspi relay create');
    if (qr.externalId !== externalId)
      throw new ProviderError('malformed', `kaspi relay create: sent ExternalId ${externalId}, the answer is about ${qr.externalId}`);
    const invoice = fromQr(qr, request);
    if (!qr.replayed) return invoice;
    // Made before (a restart, a lost answer): what Kaspi says of it now.
    const now = await read(invoice.id);
    return { ...now, payUrl: invoice.payUrl, expiresAt: invoice.expiresAt, description: request.description, replayed: true };
  }

  return {
    name: 'kaspi',

    async createInvoice(request: CreateInvoiceRequest): Promise<Invoice> {
      validateCreateRequest(request);
      if (request.captureMode === 'manual')
        throw new ProviderError('rejected', 'kaspi has no manual capture: set provider.captureMode to automatic');
      if (request.currency !== config.currency)
        throw new ProviderError('rejected', `kaspi charges in ${config.currency}; the order is in ${request.currency}`);
      const earlier = creates.get(request.idempotencyKey);
      if (earlier) {
        const first = await earlier;
        const now = await read(first.id);
        return { ...now, payUrl: first.payUrl, expiresAt: first.expiresAt, description: request.description, replayed: true };
      }
      const pending = create(request);
      remember(creates, request.idempotencyKey, pending);
      pending.catch(() => {
        if (creates.get(request.idempotencyKey) === pending) creates.delete(request.idempotencyKey);
      });
      return pending;
    },

    getInvoice: (invoiceId) => read(invoiceId),

    async cancelInvoice(invoiceId: string): Promise<Invoice> {
      checkId(invoiceId);
      // The relay asks Kaspi to cancel and answers with the read after it, whatever Kaspi said.
      const response = await send({ method: 'POST', path: `/kaspi/v1/payments/${invoiceId}/cancel`, retry: 'read' });
      return fromPayment(parseWire(relayPaymentSchema, response.body, 'kaspi relay cancel'));
    },

    async captureInvoice(invoiceId: string): Promise<Invoice> {
      throw new ProviderError('rejected', `kaspi has no manual capture (QR ${invoiceId}): use provider.captureMode automatic`);
    },

    async refund(request: RefundRequest): Promise<RefundResult> {
      checkId(request.invoiceId);
      let response: HttpResponse;
      try {
        response = await send({
          method: 'POST',
          path: `/kaspi/v1/payments/${request.invoiceId}/returns`,
          json: { returnKey: request.idempotencyKey, amount: request.amount },
          retry: 'none',
        });
      } catch (err) {
        if (err instanceof ProviderError && REFUND_UNKNOWN_KINDS.includes(err.kind)) {
          log.warn({ invoiceId: request.invoiceId, detail: err.message }, 'Kaspi return outcome unknown, not retried');
          return { status: 'unknown', detail: err.message };
        }
        throw err;
      }
      const answer = parseWire(relayReturnSchema, response.body, 'kaspi relay return');
      return {
        status: answer.outcome,
        ...(answer.returnOperationId ? { refundId: answer.returnOperationId } : {}),
        ...(answer.message ? { detail: answer.message } : {}),
      };
    },

    verifyWebhook() {
      throw new WebhookVerificationError('malformed_body', 'Kaspi QR sends no webhooks: its payments are polled');
    },

    async checkCredentials() {
      const response = await send({ method: 'GET', path: '/kaspi/v1/ping', retry: 'read' });
      const ping = parseWire(relayPingSchema, response.body, 'kaspi relay ping');
      const date = Date.parse(response.headers.get('date') ?? '');
      return {
        detail: `relay accepted device ${ping.device}; Kaspi health/ping through it: ${ping.kaspi}`,
        ...(Number.isNaN(date) ? {} : { serverDate: date }),
      };
    },
  };
}

/** Kaspi's QrPaymentId is a number: anything else is not sent anywhere. */
function checkId(invoiceId: string): void {
  if (!/^\d{1,19}$/.test(invoiceId)) throw new ProviderError('not_found', `kaspi: ${JSON.stringify(invoiceId)} is not a QrPaymentId`);
}
