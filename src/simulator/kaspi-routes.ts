/**
 * Kaspi QR's merchant API over HTTP (docs/providers.md, "Kaspi QR"), as an independent state
 * machine: `/r3/v01/qr/create`, `payment/status`, `payment/details`, `payment/return`,
 * `remote/cancel`, `health/ping`, and the test emulator (`test/payment/scan`, `confirm`,
 * `scanerror`, `confirmerror`). Kaspi answers HTTP 200 with `StatusCode` 0 or a negative code.
 *
 * Access as Kaspi grants it: only from whitelisted addresses (`kaspiWhitelist`; others get 403),
 * and either with a client certificate (the simulator on TLS with `kaspiTls`: a client without a
 * certificate signed by the CA never completes the handshake) or, in the easy scheme, an `Api-Key`.
 * What Kaspi does with a repeated ExternalId is not documented: `kaspiDuplicateExternalIds` plays
 * each reading.
 */
import type { FastifyRequest } from 'fastify';
import type { ApiResult, ApiRoute, ProviderBackend, SimContext } from './context.js';
import { headerValue } from './context.js';
import { createBackendRecords } from './backend-records.js';
import { SimHttpError, checkObjectBody, isPositiveInteger } from './request-checks.js';
import { KASPI_SIM_CODES, KaspiRefusal, createKaspiState, type KaspiSimPayment } from './kaspi-state.js';

export interface KaspiOptions {
  /** Registered devices' tokens (each one device at a trade point). */
  deviceTokens: readonly string[];
  /** Easy scheme: the Api-Key; null in the strong scheme (the certificate is checked by TLS). */
  apiKey: string | null;
  /** Addresses allowed to call; empty: any (a simulator on loopback). */
  whitelist: readonly string[];
  organizationBin: string;
  duplicateExternalIds: 'create' | 'refuse';
  qrLifetimeSec: number;
  currency: string;
  maxAttempts: number;
}

const PREFIX = '/r3/v01';

export function createKaspiBackend(ctx: SimContext, options: KaspiOptions): ProviderBackend {
  const state = createKaspiState(ctx, { currency: options.currency, qrLifetimeSec: options.qrLifetimeSec });
  const { recordCreate, created, answerReadsWith } = createBackendRecords(ctx);
  const swaps = new Map<string, string>();
  /** answerStatusWith: only payment/status of the key answers with the value's QR (details stay true). */
  const statusSwaps = new Map<string, string>();

  function access(request: FastifyRequest): void {
    if (options.whitelist.length > 0 && !options.whitelist.includes(request.ip))
      throw new SimHttpError(403, 'IP_NOT_WHITELISTED', `address ${request.ip} is not on the merchant's whitelist`);
    if (options.apiKey !== null && headerValue(request, 'api-key') !== options.apiKey)
      throw new SimHttpError(401, 'API_KEY_INVALID', 'Api-Key is missing or not accepted');
  }

  function ok(data?: unknown): ApiResult {
    return { status: 200, body: { StatusCode: 0, Message: '', ...(data === undefined ? {} : { Data: data }) } };
  }

  /** Runs a call; Kaspi's refusals are HTTP 200 with their StatusCode. */
  function kaspi(request: FastifyRequest, fn: () => ApiResult): ApiResult {
    access(request);
    try {
      return fn();
    } catch (err) {
      if (err instanceof KaspiRefusal) return { status: 200, body: { StatusCode: err.statusCode, Message: err.message } };
      throw err;
    }
  }

  function device(token: unknown): string {
    if (typeof token !== 'string' || !options.deviceTokens.includes(token))
      throw new KaspiRefusal(KASPI_SIM_CODES.deviceNotFound, 'device not found or disabled');
    return token;
  }

  function idOf(value: unknown): string {
    const text = typeof value === 'number' ? String(value) : value;
    if (typeof text !== 'string' || !/^\d{1,19}$/.test(text)) throw new KaspiRefusal(KASPI_SIM_CODES.invalid, 'QrPaymentId: a number');
    return text;
  }

  function createQr(request: FastifyRequest): ApiResult {
    return kaspi(request, () => {
      const b = checkObjectBody(request.body, ['DeviceToken', 'Amount', 'ExternalId']);
      const externalId = typeof b.ExternalId === 'string' ? b.ExternalId : null;
      try {
        device(b.DeviceToken);
        if (!isPositiveInteger(b.Amount)) throw new KaspiRefusal(KASPI_SIM_CODES.invalid, 'Amount: a positive amount in tenge');
        if (externalId === null || externalId === '' || externalId.length > 64)
          throw new KaspiRefusal(KASPI_SIM_CODES.invalid, 'ExternalId: 1-64 characters');
      } catch (err) {
        recordCreate(externalId, 'invalid');
        throw err;
      }
      const prior = state.byExternal(externalId);
      if (prior && options.duplicateExternalIds === 'refuse') {
        recordCreate(externalId, 'conflict', prior.id);
        throw new KaspiRefusal(KASPI_SIM_CODES.duplicateExternalId, `ExternalId ${externalId} was used already`);
      }
      const payment = state.create(b.DeviceToken as string, externalId, b.Amount as number, request.body);
      const call = recordCreate(externalId, 'created', payment.id);
      const answer = ok({
        QrToken: `${ctx.baseUrl()}/__sim/pay/${payment.id}`,
        ExpireDate: new Date(payment.expiresAt).toISOString(),
        QrPaymentId: Number(payment.id),
        PaymentMethods: ['Gold', 'Red', 'Loan'],
        QrPaymentBehaviorOptions: {
          StatusPollingInterval: 5,
          QrCodeScanWaitTimeout: options.qrLifetimeSec,
          PaymentConfirmationTimeout: 65,
        },
      });
      return created(call, answer.status, answer.body);
    });
  }

  function read(id: string): KaspiSimPayment {
    return state.find(swaps.get(id) ?? id);
  }

  function paymentReturn(request: FastifyRequest): ApiResult {
    return kaspi(request, () => {
      const b = checkObjectBody(request.body, ['DeviceToken', 'QrPaymentId', 'Amount']);
      const payment = state.own(idOf(b.QrPaymentId), device(b.DeviceToken));
      if (!isPositiveInteger(b.Amount)) throw new KaspiRefusal(KASPI_SIM_CODES.invalid, 'Amount: a positive amount in tenge');
      if (ctx.faultRandom.chance(ctx.faults().refundUnknown)) {
        // Kaspi's bank side did not answer in time: the money may or may not have moved.
        const happened = ctx.faultRandom.chance(0.5);
        const operationId = happened ? state.giveBack(payment, b.Amount as number) : undefined;
        ctx.records.refundUnknown.push({
          invoiceId: payment.id,
          idempotencyKey: payment.id,
          amount: b.Amount as number,
          happened,
          code: 'refund_unknown',
          httpStatus: 502,
          at: ctx.clock.now(),
          ...(operationId ? { refundId: operationId } : {}),
        });
        throw new SimHttpError(502, 'GATEWAY_TIMEOUT', 'the bank did not answer in time');
      }
      return ok({ ReturnOperationId: Number(state.giveBack(payment, b.Amount as number)) });
    });
  }

  function emulator(action: 'scan' | 'confirm' | 'scanerror' | 'confirmerror'): ApiRoute {
    return {
      method: 'POST',
      url: `${PREFIX}/test/payment/${action}`,
      faults: false,
      handler: (request) =>
        kaspi(request, () => {
          const b = checkObjectBody(request.body, ['QrPaymentId']);
          const payment = state.find(idOf(b.QrPaymentId));
          if (action === 'scan') state.scan(payment);
          else if (action === 'confirm') state.confirm(payment);
          else state.error(payment, action === 'scanerror' ? 'scan' : 'confirm');
          return ok();
        }),
    };
  }

  const routes: ApiRoute[] = [
    {
      method: 'GET',
      url: `${PREFIX}/health/ping`,
      handler: (request) => kaspi(request, () => ({ status: 200, body: { StatusCode: 0, Message: 'OK' } })),
    },
    {
      method: 'POST',
      url: `${PREFIX}/qr/create`,
      handler: createQr,
      onRejected: (fault, request) => {
        const body = request.body as { ExternalId?: unknown } | undefined;
        recordCreate(typeof body?.ExternalId === 'string' ? body.ExternalId : null, `fault:${fault}`);
      },
    },
    {
      method: 'GET',
      url: `${PREFIX}/payment/status/:id`,
      handler: (request) =>
        kaspi(request, () => {
          const id = idOf((request.params as { id: string }).id);
          ctx.records.getCalls.push({ id, at: ctx.clock.now() });
          const payment = read(statusSwaps.get(id) ?? id);
          return ok({ Status: payment.status, TransactionId: payment.status === 'Processed' ? `T${payment.id}` : undefined });
        }),
    },
    {
      method: 'GET',
      url: `${PREFIX}/payment/details`,
      handler: (request) =>
        kaspi(request, () => {
          const query = request.query as Record<string, unknown>;
          const asked = idOf(query.QrPaymentId);
          const payment = state.own(swaps.get(asked) ?? asked, device(query.DeviceToken));
          const paid = payment.status === 'Processed';
          return ok({
            QrPaymentId: Number(payment.id),
            TotalAmount: paid ? payment.paid : 0,
            AvailableReturnAmount: paid ? payment.paid - payment.returned : 0,
            TransactionDate: paid ? new Date(payment.record.paidAt ?? 0).toISOString() : undefined,
          });
        }),
    },
    { method: 'POST', url: `${PREFIX}/payment/return`, handler: paymentReturn },
    {
      method: 'POST',
      url: `${PREFIX}/remote/cancel`,
      handler: (request) =>
        kaspi(request, () => {
          const b = checkObjectBody(request.body, ['OrganizationBin', 'QrPaymentId', 'DeviceToken']);
          if (b.OrganizationBin !== options.organizationBin)
            throw new KaspiRefusal(KASPI_SIM_CODES.invalid, 'OrganizationBin: not this merchant');
          const payment = state.own(idOf(b.QrPaymentId), device(b.DeviceToken));
          state.cancel(payment);
          return ok({ Status: 'RemotePaymentCanceled' });
        }),
    },
    emulator('scan'),
    emulator('confirm'),
    emulator('scanerror'),
    emulator('confirmerror'),
  ];

  return {
    maxAttempts: options.maxAttempts,
    errorBody: (code, message) => ({ StatusCode: -1, Message: `${code}: ${message}` }),
    routes: () => routes,
    sweep: () => state.sweep(),
    pay(id, amount) {
      // A customer's app pays the QR's own amount; another `amount` plays a Kaspi that reports
      // another paid amount in its details (TotalAmount), which the device must never vend.
      if (amount !== undefined && !isPositiveInteger(amount))
        throw new SimHttpError(400, 'invalid_request', 'amount: a positive whole number of tenge');
      const payment = state.admin(id);
      try {
        if (payment.status === 'QrTokenCreated') state.scan(payment);
        state.confirm(payment, amount);
      } catch (err) {
        if (err instanceof KaspiRefusal) throw new SimHttpError(409, 'not_payable', err.message);
        throw err;
      }
    },
    expire: (id) => state.expire(state.admin(id)),
    fail(id) {
      const payment = state.admin(id);
      try {
        state.error(payment, payment.status === 'Wait' ? 'confirm' : 'scan');
      } catch (err) {
        if (err instanceof KaspiRefusal) throw new SimHttpError(409, 'not_open', err.message);
        throw err;
      }
    },
    revokeTokens: () => undefined,
    refundOutside(id, amount) {
      try {
        state.giveBack(state.admin(id), amount);
      } catch (err) {
        if (err instanceof KaspiRefusal) throw new SimHttpError(400, 'return_refused', err.message);
        throw err;
      }
    },
    answerReadsWith(id, otherId) {
      answerReadsWith(id, otherId);
      if (otherId === null) swaps.delete(id);
      else swaps.set(id, otherId);
    },
    answerStatusWith(id, otherId) {
      if (otherId === null) statusSwaps.delete(id);
      else statusSwaps.set(id, otherId);
    },
    view(id, scanned) {
      let payment: KaspiSimPayment;
      try {
        payment = state.admin(id);
      } catch {
        return undefined;
      }
      if (scanned && payment.status === 'QrTokenCreated') state.scan(payment);
      return {
        id,
        status: payment.status,
        amount: payment.amount,
        currency: options.currency,
        reference: null,
        payable: payment.status === 'QrTokenCreated' || payment.status === 'Wait',
      };
    },
    // Kaspi sends no webhooks for QR payments.
    webhookHeaders: () => ({}),
  };
}
