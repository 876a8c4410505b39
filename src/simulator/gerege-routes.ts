import type { FastifyRequest } from 'fastify';
import type { ApiResult, ApiRoute, ProviderBackend, SimContext } from './context.js';
import { headerValue } from './context.js';
import { createBackendRecords } from './backend-records.js';
import { SimHttpError, checkObjectBody, isPositiveInteger, normalisedJson, readIdempotencyKey } from './request-checks.js';
import { createGeregeState, parseCreateBody } from './gerege-state.js';
import { signGeregeWebhook } from './signing.js';

export interface GeregeOptions {
  clientId: string;
  clientSecret: string;
  tokenTtlSec: number;
  webhookSecret: string;
  maxAttempts: number;
}

/** One namespace of keys per app and environment; a key remembers the request it was first used for. */
interface KeyUse {
  fingerprint: string;
  result: { kind: 'intent' | 'refund'; id: string };
}

const EVENTS_LIMIT_MAX = 100;

export function createGeregeBackend(ctx: SimContext, options: GeregeOptions): ProviderBackend {
  const state = createGeregeState(ctx);
  const tokens = new Map<string, number>();
  const keys = new Map<string, KeyUse>();
  const { recordCreate, created, orInvalid, createRoute, readRoute, answerReadsWith } = createBackendRecords(ctx);

  function requireToken(request: FastifyRequest): void {
    const header = headerValue(request, 'authorization') ?? '';
    const match = /^Bearer (\S+)$/.exec(header);
    if (!match)
      throw new SimHttpError(401, 'invalid_token', 'Authorization: Bearer <access_token> is required', { 'www-authenticate': 'Bearer' });
    const expiresAt = tokens.get(match[1]!);
    if (expiresAt === undefined)
      throw new SimHttpError(401, 'invalid_token', 'unknown or revoked access token', {
        'www-authenticate': 'Bearer error="invalid_token"',
      });
    if (ctx.clock.now() >= expiresAt)
      throw new SimHttpError(401, 'invalid_token', 'the access token has expired', { 'www-authenticate': 'Bearer error="invalid_token"' });
  }

  function issueToken(request: FastifyRequest): ApiResult {
    const match = /^Basic (\S+)$/.exec(headerValue(request, 'authorization') ?? '');
    const decoded = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const id = colon >= 0 ? decoded.slice(0, colon) : '';
    const secret = colon >= 0 ? decoded.slice(colon + 1) : '';
    if (id !== options.clientId || secret !== options.clientSecret) {
      throw new SimHttpError(401, 'invalid_client', 'client authentication failed (HTTP Basic client_id:client_secret)', {
        'www-authenticate': 'Basic realm="gerege"',
      });
    }
    const form = (request.body ?? {}) as Record<string, unknown>;
    if (form.grant_type !== 'client_credentials') {
      throw new SimHttpError(400, 'unsupported_grant_type', 'grant_type=client_credentials is required (form-encoded)');
    }
    const token = `gat_${ctx.ids.token(32)}`;
    tokens.set(token, ctx.clock.now() + options.tokenTtlSec * 1000);
    return { status: 200, body: { access_token: token, token_type: 'Bearer', expires_in: options.tokenTtlSec } };
  }

  function createIntent(request: FastifyRequest): ApiResult {
    requireToken(request);
    const key = orInvalid(null, () => readIdempotencyKey(request.headers, true)!);
    const fingerprint = `POST /payment-intents ${normalisedJson(request.body)}`;
    const prior = keys.get(key);
    if (prior) {
      if (prior.fingerprint !== fingerprint || prior.result.kind !== 'intent') {
        recordCreate(key, 'conflict');
        throw new SimHttpError(409, 'idempotency_conflict', `Idempotency-Key ${key} was already used with a different request body`);
      }
      const call = recordCreate(key, 'replayed', prior.result.id);
      return created(call, 200, state.intentJson(state.get(prior.result.id)));
    }
    const fields = orInvalid(key, () => parseCreateBody(request.body));
    const intent = state.create(key, request.body, fields);
    keys.set(key, { fingerprint, result: { kind: 'intent', id: intent.id } });
    return created(recordCreate(key, 'created', intent.id), 201, state.intentJson(intent));
  }

  function intentParam(request: FastifyRequest): string {
    return (request.params as { id: string }).id;
  }

  /** cancel / capture / unclaim take no fields; an empty body or {} is fine. */
  function stateAction(action: 'cancel' | 'capture' | 'unclaim') {
    return (request: FastifyRequest): ApiResult => {
      requireToken(request);
      const intent = state.get(intentParam(request));
      checkObjectBody(request.body ?? {}, []);
      return { status: 200, body: state.intentJson(state[action](intent)) };
    };
  }

  function createRefund(request: FastifyRequest): ApiResult {
    requireToken(request);
    const intent = state.get(intentParam(request));
    const key = readIdempotencyKey(request.headers, true)!;
    const fingerprint = `POST /payment-intents/${intent.id}/refunds ${normalisedJson(request.body)}`;
    const prior = keys.get(key);
    if (prior) {
      if (prior.fingerprint !== fingerprint || prior.result.kind !== 'refund') {
        throw new SimHttpError(409, 'idempotency_conflict', `Idempotency-Key ${key} was already used with a different request`);
      }
      return { status: 200, body: state.refundJson(state.getRefund(prior.result.id)!) };
    }
    const body = checkObjectBody(request.body, ['amount']);
    if (!isPositiveInteger(body.amount)) throw new SimHttpError(400, 'invalid_request', 'amount: a positive integer is required');
    if (intent.status !== 'succeeded') {
      throw new SimHttpError(
        400,
        'invalid_state',
        `payment intent ${intent.id} is ${intent.status}; only succeeded intents can be refunded`,
      );
    }
    const remaining = state.remainingRefundable(intent);
    if (body.amount > remaining) {
      throw new SimHttpError(400, 'invalid_request', `amount ${body.amount} exceeds the refundable remainder ${remaining}`);
    }
    const refund = state.refund(intent, body.amount, key);
    keys.set(key, { fingerprint, result: { kind: 'refund', id: refund.id } });
    return { status: 201, body: state.refundJson(refund) };
  }

  function listEvents(request: FastifyRequest): ApiResult {
    requireToken(request);
    const query = request.query as Record<string, string | undefined>;
    const problems: string[] = [];
    const createdAfter = query.created_after === undefined ? undefined : Number(query.created_after);
    if (createdAfter !== undefined && !(Number.isInteger(createdAfter) && createdAfter >= 0)) problems.push('created_after: unix seconds');
    const limit = query.limit === undefined ? EVENTS_LIMIT_MAX : Number(query.limit);
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= EVENTS_LIMIT_MAX)) problems.push(`limit: an integer 1-${EVENTS_LIMIT_MAX}`);
    if (problems.length > 0) throw new SimHttpError(400, 'invalid_request', problems.join('; '));
    const all = state.events();
    let start = 0;
    if (query.starting_after !== undefined) {
      const index = all.findIndex((e) => e.id === query.starting_after);
      if (index < 0) throw new SimHttpError(400, 'invalid_request', `starting_after: no event ${query.starting_after}`);
      start = index + 1;
    }
    // created_after is inclusive: times are whole seconds, and an exclusive bound would lose the
    // other events of the same second. Consumers dedupe by event id anyway.
    const matching = all.slice(start).filter((e) => createdAfter === undefined || e.created >= createdAfter);
    return { status: 200, body: { data: matching.slice(0, limit).map((e) => e.body), has_more: matching.length > limit } };
  }

  const routes: ApiRoute[] = [
    { method: 'POST', url: '/oauth2/token', faults: false, handler: issueToken },
    createRoute('/payment-intents', createIntent),
    readRoute('/payment-intents/:id', requireToken, (id) => state.intentJson(state.get(id))),
    { method: 'POST', url: '/payment-intents/:id/cancel', handler: stateAction('cancel') },
    { method: 'POST', url: '/payment-intents/:id/capture', handler: stateAction('capture') },
    { method: 'POST', url: '/payment-intents/:id/unclaim', handler: stateAction('unclaim') },
    { method: 'POST', url: '/payment-intents/:id/refunds', handler: createRefund },
    { method: 'GET', url: '/events', handler: listEvents },
  ];

  return {
    maxAttempts: options.maxAttempts,
    errorBody: (code, message) => ({ error: { code, message } }),
    routes: () => routes,
    sweep: state.sweep,
    pay: state.pay,
    expire: state.expire,
    fail: (id) => {
      state.get(id);
      throw new SimHttpError(400, 'unsupported', 'Gerege has no failed status: a declined payment leaves the intent open');
    },
    revokeTokens: () => tokens.clear(),
    refundOutside: (id, amount) => {
      const intent = state.get(id);
      if (intent.status !== 'succeeded')
        throw new SimHttpError(400, 'invalid_state', `payment intent ${id} is ${intent.status}; only succeeded intents can be refunded`);
      if (amount > state.remainingRefundable(intent))
        throw new SimHttpError(400, 'invalid_request', `amount ${amount} exceeds the refundable remainder`);
      state.refund(intent, amount, `dashboard-${ctx.ids.token(12)}`);
    },
    answerReadsWith,
    view: state.view,
    webhookHeaders: (event, nowMs) => ({
      'content-type': 'application/json',
      'gerege-event-id': event.eventId,
      'gerege-signature': signGeregeWebhook(options.webhookSecret, event.body, Math.floor(nowMs / 1000)),
    }),
  };
}
