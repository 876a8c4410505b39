/**
 * What the relay does for a device's Kaspi call (docs/providers.md, "Kaspi QR"): always with that
 * device's own DeviceToken, only on QRs that device made, and never sending a create or a return
 * to Kaspi twice (kaspi-journal.ts). Answers are `{ status, body }` for the device API; the
 * listener (kaspi-server.ts) authenticates the device first.
 */
import type { Logger } from '../util/logger.js';
import {
  KASPI_RELAY_ERRORS as E,
  kaspiDetailsSchema,
  kaspiEnvelopeSchema,
  kaspiQrCreatedSchema,
  kaspiReturnSchema,
  kaspiStatusSchema,
  type RelayPayment,
  type RelayQr,
} from '../payments/adapters.js';
import type { z } from 'zod';
import { callKaspi, type KaspiAccess, type KaspiCall } from './kaspi-client.js';
import type { CreateRow, KaspiJournal } from './kaspi-journal.js';

export interface KaspiAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** For the audit line: what happened, in one word. */
  outcome: string;
}

export interface KaspiCallerDeps {
  journal: KaspiJournal;
  access: KaspiAccess;
  now: () => number;
  logger: Logger;
  tokenOf(deviceId: string): string | undefined;
  organizationBin: string;
  livemode: boolean;
  /** Told every Kaspi call's outcome class (metrics). */
  onKaspiCall?(kind: KaspiCall['kind'] | 'refused'): void;
}

const P = '/r3/v01';
const EXTERNAL_ID = /^[A-Za-z0-9_-]{1,64}$/;

function fail(status: number, code: string, message: string, outcome = code, headers?: Record<string, string>): KaspiAnswer {
  return { status, body: { error: { code, message } }, outcome, ...(headers ? { headers } : {}) };
}

export function createKaspiCaller(deps: KaspiCallerDeps) {
  const { journal } = deps;
  const log = deps.logger.child({ module: 'relay-kaspi' });

  async function call(req: { method: 'GET' | 'POST'; path: string; json?: unknown }): Promise<KaspiCall> {
    const result = await callKaspi(deps.access, req);
    deps.onKaspiCall?.(result.kind);
    return result;
  }

  /** A Kaspi answer's Data when StatusCode is 0; a refusal; or null when the body is not Kaspi's envelope. */
  function envelope<T>(
    body: unknown,
    schema: z.ZodType<T>,
  ): { ok: true; data: T } | { ok: false; statusCode: number; message: string } | null {
    const env = kaspiEnvelopeSchema.safeParse(body);
    if (!env.success) return null;
    if (env.data.StatusCode !== 0) {
      deps.onKaspiCall?.('refused');
      return { ok: false, statusCode: env.data.StatusCode, message: env.data.Message ?? '' };
    }
    const data = schema.safeParse(env.data.Data);
    return data.success ? { ok: true, data: data.data } : null;
  }

  /** A read's failure, as the device sees it: all transient (the poller keeps reading). */
  function readFailure(result: KaspiCall, what: string): KaspiAnswer {
    if (result.kind === 'unreached') return fail(503, E.unreachable, `${what}: ${result.message}`);
    if (result.kind === 'lost') return fail(502, E.kaspiError, `${what}: ${result.message}`, 'lost');
    if (result.status === 401 || result.status === 403) {
      log.error(
        { httpStatus: result.status, what },
        "Kaspi refused the relay's access: check the whitelist, the certificate or the API key",
      );
      return fail(503, 'kaspi_access_refused', `${what}: Kaspi refused the relay's access (HTTP ${result.status})`, 'access_refused');
    }
    if (result.status === 429)
      return fail(429, 'rate_limited', `${what}: Kaspi asks to slow down`, 'kaspi_429', { 'retry-after': result.retryAfter ?? '2' });
    return fail(502, E.kaspiError, `${what}: Kaspi answered HTTP ${result.status}`, `kaspi_${result.status}`);
  }

  function qrAnswer(row: CreateRow, replayed: boolean): KaspiAnswer {
    const body: RelayQr = {
      qrPaymentId: row.qr_payment_id ?? '',
      externalId: row.external_id,
      reference: row.reference,
      amount: row.amount,
      qrToken: row.qr_token ?? '',
      expiresInSec: Math.max(0, Math.floor(((row.expires_at ?? 0) - deps.now()) / 1000)),
      ...(row.poll_interval_sec ? { pollIntervalSec: row.poll_interval_sec } : {}),
      livemode: deps.livemode,
      replayed,
    };
    return { status: 200, body, outcome: replayed ? 'replayed' : 'created' };
  }

  function fromJournal(row: CreateRow): KaspiAnswer {
    switch (row.state) {
      case 'created':
        return qrAnswer(row, true);
      case 'refused':
        return fail(422, E.refused, `Kaspi refused ExternalId ${row.external_id} earlier: ${row.detail ?? ''}`);
      case 'in_doubt':
        return fail(409, E.inDoubt, `Kaspi's answer for ExternalId ${row.external_id} was lost; it is not sent again`);
      case 'sending':
        return fail(503, E.inProgress, `ExternalId ${row.external_id} is being sent now`, E.inProgress, { 'retry-after': '1' });
    }
  }

  async function readPayment(deviceId: string, row: CreateRow, token: string): Promise<KaspiAnswer> {
    const id = row.qr_payment_id ?? '';
    const status = await call({ method: 'GET', path: `${P}/payment/status/${id}` });
    if (status.kind !== 'answer' || status.status !== 200) return readFailure(status, 'payment/status');
    const word = envelope(status.body, kaspiStatusSchema);
    if (word === null) return fail(502, E.kaspiError, 'payment/status: not the answer Kaspi documents', 'malformed');
    if (!word.ok) return fail(502, E.kaspiError, `payment/status: Kaspi refused (${word.statusCode} ${word.message})`, 'refused');
    let returned = 0;
    // Before Kaspi says Processed nothing is paid: the QR's own amount. After, what Kaspi's details say was paid.
    let amount = row.amount;
    if (word.data.Status === 'Processed') {
      const query = `?QrPaymentId=${encodeURIComponent(id)}&DeviceToken=${encodeURIComponent(token)}`;
      const details = await call({ method: 'GET', path: `${P}/payment/details${query}` });
      if (details.kind !== 'answer' || details.status !== 200) return readFailure(details, 'payment/details');
      const d = envelope(details.body, kaspiDetailsSchema);
      if (d === null) return fail(502, E.kaspiError, 'payment/details: not the answer Kaspi documents', 'malformed');
      if (!d.ok) return fail(502, E.kaspiError, `payment/details: Kaspi refused (${d.statusCode} ${d.message})`, 'refused');
      // Kaspi's status answer names no QR; its details do: an answer about another QR is never read as this one's.
      if (d.data.QrPaymentId !== undefined && String(d.data.QrPaymentId) !== id)
        return fail(502, E.malformed, `payment/details: asked for ${id}, the answer is about ${String(d.data.QrPaymentId)}`, 'malformed');
      // Processed with nothing paid (a status answer about another QR: it names none) is not a payment: read again.
      const total = d.data.TotalAmount;
      if (!Number.isSafeInteger(total) || total <= 0 || d.data.AvailableReturnAmount > total)
        return fail(
          502,
          E.malformed,
          `payment/details: ${id} is Processed but its details show TotalAmount ${total}, AvailableReturnAmount ${d.data.AvailableReturnAmount}`,
          'malformed',
        );
      amount = total;
      returned = Math.round(total - d.data.AvailableReturnAmount);
    }
    const body: RelayPayment = {
      qrPaymentId: id,
      reference: row.reference,
      amount,
      status: word.data.Status,
      returnedAmount: returned,
      expiresInSec: Math.max(0, Math.floor(((row.expires_at ?? 0) - deps.now()) / 1000)),
      livemode: deps.livemode,
    };
    log.debug({ deviceId, qrPaymentId: id, status: word.data.Status }, 'kaspi status read');
    return { status: 200, body, outcome: word.data.Status };
  }

  function ownOrRefuse(deviceId: string, id: string): CreateRow | KaspiAnswer {
    // Another device's QR answers exactly as one that does not exist: nothing about it leaks.
    if (!/^\d{1,19}$/.test(id)) return fail(404, E.notFound, 'no such payment for this device');
    return journal.owned(id, deviceId) ?? fail(404, E.notFound, 'no such payment for this device');
  }

  return {
    async create(deviceId: string, input: unknown): Promise<KaspiAnswer> {
      const token = deps.tokenOf(deviceId);
      if (!token) return fail(403, E.unauthenticated, 'no Kaspi device token is configured for this device');
      const b = (input ?? {}) as Record<string, unknown>;
      if (
        typeof b.externalId !== 'string' ||
        !EXTERNAL_ID.test(b.externalId) ||
        typeof b.reference !== 'string' ||
        b.reference.length < 1 ||
        b.reference.length > 128 ||
        typeof b.amount !== 'number' ||
        !Number.isSafeInteger(b.amount) ||
        b.amount <= 0 ||
        Object.keys(b).some((k) => !['externalId', 'reference', 'amount'].includes(k))
      )
        return fail(400, E.invalid, 'body: { externalId (1-64 of A-Z a-z 0-9 _ -), reference, amount (a positive whole number of tenge) }');
      const { row, fresh } = journal.claimCreate(deviceId, b.externalId, b.reference, b.amount);
      if (!fresh) {
        if (row.amount !== b.amount || row.reference !== b.reference)
          return fail(422, E.refused, `ExternalId ${b.externalId} was used before for another order or amount`, 'external_id_reused');
        return fromJournal(row);
      }
      const result = await call({
        method: 'POST',
        path: `${P}/qr/create`,
        json: { DeviceToken: token, Amount: b.amount, ExternalId: b.externalId },
      });
      const externalId = b.externalId;
      if (result.kind === 'unreached') {
        journal.forgetCreate(deviceId, externalId);
        return fail(503, E.unreachable, result.message);
      }
      if (result.kind === 'lost') {
        journal.settleCreate(deviceId, externalId, 'in_doubt', result.message);
        log.warn({ deviceId, externalId }, 'Kaspi create answer lost: this ExternalId is never sent again');
        return fail(409, E.inDoubt, `Kaspi's answer for ExternalId ${externalId} was lost; it is not sent again`);
      }
      if (result.status === 429 || result.status === 401 || result.status === 403) {
        // Refused before Kaspi took it: as if never asked.
        journal.forgetCreate(deviceId, externalId);
        if (result.status === 429)
          return fail(429, 'rate_limited', 'Kaspi asks to slow down', 'kaspi_429', { 'retry-after': result.retryAfter ?? '2' });
        log.error(
          { deviceId, httpStatus: result.status },
          "Kaspi refused the relay's access: check the whitelist, the certificate or the API key",
        );
        return fail(503, 'kaspi_access_refused', `Kaspi refused the relay's access (HTTP ${result.status})`, 'access_refused');
      }
      if (result.status !== 200) {
        journal.settleCreate(deviceId, externalId, 'in_doubt', `HTTP ${result.status}`);
        return fail(409, E.inDoubt, `Kaspi answered HTTP ${result.status} to ExternalId ${externalId}; it is not sent again`);
      }
      const created = envelope(result.body, kaspiQrCreatedSchema);
      if (created === null) {
        journal.settleCreate(deviceId, externalId, 'in_doubt', 'unreadable answer');
        return fail(409, E.inDoubt, `Kaspi's answer for ExternalId ${externalId} was unreadable; it is not sent again`);
      }
      if (!created.ok) {
        const detail = `${created.statusCode} ${created.message}`;
        journal.settleCreate(deviceId, externalId, 'refused', detail);
        return fail(422, E.refused, `Kaspi refused the QR: ${detail}`);
      }
      const expires = Date.parse(created.data.ExpireDate);
      const lifetimeSec = created.data.QrPaymentBehaviorOptions?.QrCodeScanWaitTimeout;
      journal.created(deviceId, externalId, {
        qrPaymentId: String(created.data.QrPaymentId),
        qrToken: created.data.QrToken,
        // Kaspi's lifetime on the relay's clock when it says one; its ExpireDate otherwise.
        expiresAt: lifetimeSec !== undefined ? deps.now() + lifetimeSec * 1000 : Number.isNaN(expires) ? deps.now() + 120_000 : expires,
        pollIntervalSec: created.data.QrPaymentBehaviorOptions?.StatusPollingInterval ?? null,
      });
      const stored = journal.owned(String(created.data.QrPaymentId), deviceId);
      if (!stored) return fail(500, 'internal', 'the journal lost the QR it just stored', 'internal');
      return qrAnswer(stored, false);
    },

    async read(deviceId: string, id: string): Promise<KaspiAnswer> {
      const token = deps.tokenOf(deviceId);
      const own = ownOrRefuse(deviceId, id);
      if ('status' in own) return own;
      if (!token) return fail(403, E.unauthenticated, 'no Kaspi device token is configured for this device');
      return readPayment(deviceId, own, token);
    },

    async cancel(deviceId: string, id: string): Promise<KaspiAnswer> {
      const token = deps.tokenOf(deviceId);
      const own = ownOrRefuse(deviceId, id);
      if ('status' in own) return own;
      if (!token) return fail(403, E.unauthenticated, 'no Kaspi device token is configured for this device');
      const result = await call({
        method: 'POST',
        path: `${P}/remote/cancel`,
        json: { OrganizationBin: deps.organizationBin, QrPaymentId: Number(id), DeviceToken: token },
      });
      // Whatever Kaspi said (a paid QR refuses), the read after it is the answer.
      if (result.kind !== 'answer') log.warn({ deviceId, qrPaymentId: id, detail: result.message }, 'Kaspi cancel: no answer; reading');
      else {
        const said = kaspiEnvelopeSchema.safeParse(result.body);
        if (!said.success || said.data.StatusCode !== 0)
          log.info(
            { deviceId, qrPaymentId: id, httpStatus: result.status, statusCode: said.data?.StatusCode },
            'Kaspi did not take the cancel; reading',
          );
      }
      return readPayment(deviceId, own, token);
    },

    async giveBack(deviceId: string, id: string, input: unknown): Promise<KaspiAnswer> {
      const token = deps.tokenOf(deviceId);
      const own = ownOrRefuse(deviceId, id);
      if ('status' in own) return own;
      if (!token) return fail(403, E.unauthenticated, 'no Kaspi device token is configured for this device');
      const b = (input ?? {}) as Record<string, unknown>;
      if (
        typeof b.returnKey !== 'string' ||
        b.returnKey.length < 1 ||
        b.returnKey.length > 200 ||
        typeof b.amount !== 'number' ||
        !Number.isSafeInteger(b.amount) ||
        b.amount <= 0 ||
        b.amount > own.amount
      )
        return fail(400, E.invalid, `body: { returnKey, amount (1..${own.amount}) }`);
      const { row, fresh } = journal.claimReturn(deviceId, b.returnKey, id, b.amount);
      if (!fresh) {
        if (row.qr_payment_id !== id || row.amount !== b.amount)
          return fail(422, E.refused, 'this return key was used for another return', 'return_key_reused');
        const outcome = row.state === 'succeeded' || row.state === 'failed' ? row.state : 'unknown';
        return {
          status: 200,
          body: {
            outcome,
            ...(row.return_operation_id ? { returnOperationId: row.return_operation_id } : {}),
            message: `answered from the relay's journal: ${row.detail ?? row.state}`,
          },
          outcome: `journal_${outcome}`,
        };
      }
      const result = await call({
        method: 'POST',
        path: `${P}/payment/return`,
        json: { DeviceToken: token, QrPaymentId: Number(id), Amount: b.amount },
      });
      const key = b.returnKey;
      if (result.kind === 'unreached' || (result.kind === 'answer' && result.status === 429)) {
        journal.forgetReturn(deviceId, key);
        return result.kind === 'unreached'
          ? fail(503, E.unreachable, result.message)
          : fail(429, 'rate_limited', 'Kaspi asks to slow down', 'kaspi_429', { 'retry-after': result.retryAfter ?? '2' });
      }
      const unknown = (detail: string): KaspiAnswer => {
        journal.settleReturn(deviceId, key, 'unknown', detail);
        log.warn({ deviceId, qrPaymentId: id, detail }, 'Kaspi return outcome unknown: never sent again; read the payment');
        return { status: 200, body: { outcome: 'unknown', message: detail }, outcome: 'unknown' };
      };
      if (result.kind === 'lost') return unknown(result.message);
      if (result.status !== 200) return unknown(`Kaspi answered HTTP ${result.status}`);
      const answer = envelope(result.body, kaspiReturnSchema);
      if (answer === null) return unknown('unreadable answer');
      if (!answer.ok) {
        const detail = `Kaspi refused the return: ${answer.statusCode} ${answer.message}`;
        journal.settleReturn(deviceId, key, 'failed', detail);
        return { status: 200, body: { outcome: 'failed', message: detail }, outcome: 'failed' };
      }
      const operationId = String(answer.data.ReturnOperationId);
      journal.settleReturn(deviceId, key, 'succeeded', null, operationId);
      return { status: 200, body: { outcome: 'succeeded', returnOperationId: operationId }, outcome: 'succeeded' };
    },

    async ping(deviceId: string): Promise<KaspiAnswer> {
      const result = await call({ method: 'GET', path: `${P}/health/ping` });
      if (result.kind !== 'answer' || result.status !== 200) return readFailure(result, 'health/ping');
      const env = kaspiEnvelopeSchema.safeParse(result.body);
      if (!env.success || env.data.StatusCode !== 0) return fail(502, E.kaspiError, 'health/ping: Kaspi did not say OK', 'not_ok');
      return { status: 200, body: { device: deviceId, kaspi: env.data.Message || 'OK', livemode: deps.livemode }, outcome: 'ok' };
    },
  };
}

export type KaspiCaller = ReturnType<typeof createKaspiCaller>;
