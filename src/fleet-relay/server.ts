import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { ErrorCodes } from '../util/errors.js';
import {
  forwardedWebhookHeaders,
  providerWebhooks,
  withCallbackQuery,
  WebhookVerificationError,
  type ProviderWebhooks,
} from '../payments/index.js';
import { encodeWebhookMessage, pickForwardedHeaders, type FleetTopics, type RelayConnection } from '../mqtt/index.js';
import type { Locator } from './locate.js';
import type { RelayCounters } from './counters.js';
import { NO_JSON_SCHEMAS } from '../util/fastify-schemas.js';
import { bindListener, listenerLimits, servedOn, type ListenerLimits } from '../util/http-listener.js';

export interface RelayServerDeps {
  clock: Clock;
  logger: Logger;
  broker: RelayConnection;
  topics: FleetTopics;
  locator: Locator;
  counters: RelayCounters;
  secrets: Readonly<Record<string, readonly string[]>>;
}

export interface RelayServerSettings extends ListenerLimits {
  host: string;
  port: number;
  bodyLimitBytes: number;
  providers: readonly string[];
  toleranceSec: number;
  publishTimeoutMs: number;
  /**
   * After the route backlog was read, an unknown reference is still answered 503 (retry) this long
   * (0: not at all). Before it was read, always 503.
   */
  routesWarmupSec: number;
}

/**
 * `POST /webhooks/<provider>` for the whole fleet, and `GET /webhooks/health` (503 without a broker,
 * so a load balancer takes this replica out). Verify → locate → publish the raw body and signature
 * headers, QoS 1 → 200 only after the PUBACK. Nothing else is served.
 */
export function createRelayServer(deps: RelayServerDeps, settings: RelayServerSettings) {
  const { counters, broker, locator, topics, clock } = deps;
  const log = deps.logger.child({ module: 'relay' });
  let app: FastifyInstance | null = null;
  // The device's webhook listener's binder: header, body and idle timeouts and the connection
  // cap, so a crowd of slow or idle clients cannot hold the fleet's one endpoint.
  const served = servedOn(() =>
    bindListener({ host: settings.host, port: settings.port, portSetting: 'relay.port' }, listenerLimits(settings)),
  );
  // A wrong secret refuses every webhook: say so in the journal, but at most once per reason per 10 s.
  const lastWarned = new Map<string, number>();
  function warnThrottled(reason: string, fields: Record<string, unknown>, message: string): void {
    const now = clock.now();
    if (now - (lastWarned.get(reason) ?? -Infinity) < 10_000) return;
    lastWarned.set(reason, now);
    log.warn({ reason, ...fields }, message);
  }

  // Each route is served by its provider's own verify module (payments/<provider>/webhook.ts).
  const knowledge = new Map(
    settings.providers.map((provider) => {
      const k = providerWebhooks(provider);
      if (!k) throw new Error(`relay.providers: no webhook knowledge in payments/ for ${provider}`);
      return [provider, k] as const;
    }),
  );

  /** True while an unknown reference may be a route not read yet (the backlog, or the grace after it). */
  function learning(): boolean {
    if (!broker.routesLearned()) return true;
    const since = broker.firstLearnedAt();
    return since === null || clock.now() - since < settings.routesWarmupSec * 1000;
  }

  async function receive(provider: string, hooks: ProviderWebhooks, request: FastifyRequest, reply: FastifyReply) {
    counters.received += 1;
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const headers = withCallbackQuery(request);
    let target;
    try {
      target = hooks.route(rawBody, headers, {
        secrets: deps.secrets[provider] ?? [],
        toleranceSec: settings.toleranceSec,
        now: clock.now(),
      });
    } catch (err) {
      counters.refused += 1;
      const reason = err instanceof WebhookVerificationError ? err.reason : 'unverifiable';
      const code = reason === 'malformed_body' || reason === 'unverifiable' ? ErrorCodes.WEBHOOK_MALFORMED : ErrorCodes.WEBHOOK_SIGNATURE;
      warnThrottled(
        reason,
        { provider, refusedSoFar: counters.refused },
        'webhook refused: nothing published (check the webhook secret if this persists)',
      );
      return reply.code(400).send({ error: code, reason });
    }
    const location = await locator.locate(provider, target);
    if (location.kind === 'retry') {
      counters.retryLater += 1;
      return reply.code(503).send({ error: ErrorCodes.PROVIDER_UNAVAILABLE, reason: location.reason });
    }
    if (location.kind === 'unknown' && learning()) {
      // A 202 now would lose the webhook for a device whose route simply has not arrived yet.
      counters.retryLater += 1;
      return reply.code(503).send({ error: 'VG_ERR_BROKER_UNAVAILABLE', reason: 'routes_loading' });
    }
    if (location.kind === 'unknown') {
      // It may belong to another system on the same merchant account: accept, count, move on.
      counters.unrouted += 1;
      log.debug({ provider, reason: location.reason }, 'webhook for no known device');
      return reply.code(202).send({ received: true, routed: false });
    }
    const topic = topics.webhook(location.deviceId, provider);
    try {
      await broker.publish(
        topic,
        encodeWebhookMessage(pickForwardedHeaders(headers, forwardedWebhookHeaders(provider)), rawBody),
        settings.publishTimeoutMs,
      );
    } catch (err) {
      counters.notAcknowledged += 1;
      warnThrottled(
        'not_acknowledged',
        { err, topic, notAcknowledgedSoFar: counters.notAcknowledged },
        'webhook not acknowledged by the broker: 503, the provider retries',
      );
      return reply.code(503).send({ error: 'VG_ERR_BROKER_UNAVAILABLE', reason: 'not_acknowledged' });
    }
    counters.published += 1;
    return reply.code(200).send({ received: true, device: location.deviceId });
  }

  function build(): FastifyInstance {
    if (app) return app;
    const server = Fastify({ logger: false, bodyLimit: settings.bodyLimitBytes, schemaController: NO_JSON_SCHEMAS });
    server.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: settings.bodyLimitBytes }, (_request, body, done) =>
        done(null, body),
      );
      for (const [provider, hooks] of knowledge) {
        if (hooks.orderInQuery) continue;
        scope.post(`/webhooks/${provider}`, (request, reply) => receive(provider, hooks, request, reply));
      }
    });
    // A callback whose order is in its URL and whose method and body are undocumented: any body, or a GET,
    // in a scope of its own so that the signed providers' routes still take JSON only.
    server.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: settings.bodyLimitBytes }, (_request, body, done) =>
        done(null, body),
      );
      for (const [provider, hooks] of knowledge) {
        if (!hooks.orderInQuery) continue;
        scope.post(`/webhooks/${provider}`, (request, reply) => receive(provider, hooks, request, reply));
        scope.get(`/webhooks/${provider}`, (request, reply) => receive(provider, hooks, request, reply));
      }
    });
    server.get('/webhooks/health', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      // Ready means the backlog is read: a balancer sends nothing here while routes are still arriving.
      const status = !broker.connected() || !broker.routesSubscribed() ? 'no_broker' : broker.routesLearned() ? 'ok' : 'routes_loading';
      return reply.code(status === 'ok' ? 200 : 503).send({ status });
    });
    server.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'not_found' }));
    server.setErrorHandler((err: FastifyError, _request, reply) => {
      const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      if (status === 500) log.error({ err }, 'relay listener error');
      else counters.refused += 1;
      return reply.code(status).send({
        error: status === 500 ? 'internal' : ErrorCodes.WEBHOOK_MALFORMED,
        reason: status === 413 ? 'body_too_large' : status === 415 ? 'unsupported_media_type' : (err.code ?? 'bad_request').toLowerCase(),
      });
    });
    app = server;
    return server;
  }

  return {
    start: async (): Promise<{ url: string; port: number }> => served.start(build()),
    // Stop accepting first, then let fastify finish what is in flight.
    stop: (): Promise<void> => served.stop(app),
    inject: ((...args: Parameters<FastifyInstance['inject']>) =>
      (build().inject as (...a: unknown[]) => unknown)(...args)) as FastifyInstance['inject'],
  };
}
