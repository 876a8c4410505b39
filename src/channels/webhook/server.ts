import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { ErrorCodes } from '../../util/errors.js';
import { WebhookVerificationError, type PaymentProvider } from '../../payments/types.js';
import { providerWebhooks, withCallbackQuery } from '../../payments/index.js';
import type { WebhookInbox } from './inbox.js';
import { dateSkewSec } from './verify.js';
import { bindListener, servedOn, WEBHOOK_LISTENER_DEFAULTS, type BoundListener, type ListenerLimits } from '../../util/http-listener.js';
import { NO_JSON_SCHEMAS } from '../../util/fastify-schemas.js';

/** A provider's `Date` this far from our clock is worth a warning, well before a signature's 300 s (docs/providers.md). */
export const SKEW_WARN_SEC = 60;
/** Refusals and skew warnings are logged at most this often per reason, so a flood cannot fill the journal. */
const LOG_THROTTLE_MS = 10_000;

export interface WebhookServerDeps {
  provider: PaymentProvider;
  inbox: WebhookInbox;
  clock: Clock;
  logger: Logger;
  /** All accepted at once (rotation). Never logged. */
  secrets: readonly string[];
  toleranceSec: number;
  /** A new event the worker must process was stored. Called after the commit; must not throw. */
  onAccepted?: (eventId: string) => void;
  /** Any verified delivery, new or duplicate: the tunnel and the provider's sending work. */
  onDelivered?: () => void;
  /** A delivery the database could not store: told to the storage state (a full or failing card). */
  onStoreFailed?: (err: unknown) => void;
  /** The provider's Date header against our clock, in seconds, on every VERIFIED delivery that has one. */
  onClockSkew?: (skewSec: number) => void;
  /** A port bound before the database was opened (app start order); start() binds its own without one. */
  listener?: BoundListener;
}

export interface WebhookServerSettings {
  /** 127.0.0.1 by default: cloudflared on the same device reaches it on loopback; 0.0.0.0 only for a tunnel on another host. */
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  bodyLimitBytes: number;
  /** Timeouts and the connection cap; WEBHOOK_LISTENER_DEFAULTS without them. */
  limits?: ListenerLimits;
}

export interface WebhookServer {
  /** Listens; resolves with the address actually bound. */
  start(): Promise<{ url: string; port: number }>;
  /** Closes the listener. Safe to call twice, and before start(). */
  stop(): Promise<void>;
  /** fastify's inject(): requests without a socket, for tests. */
  inject: FastifyInstance['inject'];
}

/**
 * The only listener the tunnel exposes: `POST /webhooks/<provider>` and `GET /webhooks/health`,
 * nothing else. The body is kept as raw bytes and verified before anything reads it; a verified
 * event is stored once (dedupe by id) and answered at once — no network call in the handler.
 */
export function createWebhookServer(deps: WebhookServerDeps, settings: WebhookServerSettings): WebhookServer {
  const { provider, inbox, clock } = deps;
  const log = deps.logger.child({ module: 'webhook' });
  const path = `/webhooks/${provider.name}`;
  const lastLogged = new Map<string, { at: number; suppressed: number }>();
  let app: FastifyInstance | null = null;
  const served = servedOn(
    () =>
      bindListener(
        { host: settings.host, port: settings.port, portSetting: 'http.webhook.port' },
        settings.limits ?? WEBHOOK_LISTENER_DEFAULTS,
      ),
    deps.listener ?? null,
  );
  let stopping: Promise<void> | null = null;

  /** True when this kind of line may be logged now; counts the ones held back. */
  function mayLog(kind: string): { ok: boolean; suppressed: number } {
    const now = clock.now();
    const entry = lastLogged.get(kind);
    if (entry && now - entry.at < LOG_THROTTLE_MS) {
      entry.suppressed += 1;
      return { ok: false, suppressed: 0 };
    }
    lastLogged.set(kind, { at: now, suppressed: 0 });
    return { ok: true, suppressed: entry?.suppressed ?? 0 };
  }

  function refuse(reply: FastifyReply, status: number, code: string, reason: string) {
    const gate = mayLog(`refused:${reason}`);
    if (gate.ok) log.warn({ status, reason, suppressedSinceLast: gate.suppressed }, 'webhook refused');
    return reply.code(status).send({ error: code, reason });
  }

  async function receive(request: FastifyRequest, reply: FastifyReply) {
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const now = clock.now();
    let verified;
    try {
      verified = provider.verifyWebhook(rawBody, withCallbackQuery(request), {
        secrets: deps.secrets,
        toleranceSec: deps.toleranceSec,
        now,
      });
    } catch (err) {
      if (err instanceof WebhookVerificationError) {
        const code = err.reason === 'malformed_body' ? ErrorCodes.WEBHOOK_MALFORMED : ErrorCodes.WEBHOOK_SIGNATURE;
        if (err.reason === 'no_secrets') log.error('no webhook secret is configured: every webhook is refused');
        return refuse(reply, 400, code, err.reason);
      }
      // An adapter that throws something else on hostile bytes is still bad input, not our failure.
      log.error({ err }, 'webhook verification threw unexpectedly');
      return refuse(reply, 400, ErrorCodes.WEBHOOK_MALFORMED, 'unverifiable');
    }

    const { event, secretIndex } = verified;
    // Only now may anything about the request count: an unsigned one must not move the skew alarm.
    const skew = dateSkewSec(request.headers, now);
    if (skew !== null && Math.abs(skew) > SKEW_WARN_SEC && mayLog('skew').ok) {
      log.warn({ skewSec: skew }, "the provider's Date header differs from this device's clock: check NTP");
    }
    if (skew !== null) deps.onClockSkew?.(skew);
    let stored;
    try {
      stored = await inbox.addCommitted(event, rawBody, provider.name, 'webhook', now);
    } catch (err) {
      // The provider retries on 5xx: nothing is lost by refusing now.
      log.error({ err, eventId: event.eventId }, 'webhook not stored: database error');
      deps.onStoreFailed?.(err);
      return reply.code(500).send({ error: ErrorCodes.DATABASE, reason: 'storage_failed' });
    }
    deps.onDelivered?.();
    if (stored.inserted && stored.handled) deps.onAccepted?.(event.eventId);
    if (stored.inserted) {
      // Nothing to do (another device's invoice, a type we ignore): debug. On a merchant account
      // shared by several devices those are most deliveries, and each info line is a journal write.
      log[stored.handled ? 'info' : 'debug'](
        { eventId: event.eventId, type: event.type, objectId: event.objectId, secretIndex, handled: stored.handled },
        'webhook accepted',
      );
    } else {
      log.debug({ eventId: event.eventId, type: event.type, secretIndex }, 'duplicate webhook acknowledged');
    }
    return reply.code(200).send({ received: true, duplicate: !stored.inserted });
  }

  // Built on first use, not in the factory: constructors do nothing.
  function build(): FastifyInstance {
    if (app) return app;
    const server = Fastify({ logger: false, bodyLimit: settings.bodyLimitBytes, schemaController: NO_JSON_SCHEMAS });
    server.register(async (scope) => {
      // Raw bytes for the signature, and nothing but JSON: other content types get 415 before the handler.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: settings.bodyLimitBytes }, (_request, body, done) =>
        done(null, body),
      );
      scope.post(path, { bodyLimit: settings.bodyLimitBytes }, receive);
      if (providerWebhooks(provider.name)?.orderInQuery) {
        // An unsigned callback naming its order in the URL (QPay), method and body undocumented: any body, or a GET.
        scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: settings.bodyLimitBytes }, (_request, body, done) =>
          done(null, body),
        );
        scope.get(path, receive);
      }
    });
    server.get('/webhooks/health', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      return { status: 'ok' };
    });
    server.setNotFoundHandler((_request, reply) => {
      reply.code(404).send({ error: 'not_found' });
    });
    server.setErrorHandler((err: FastifyError, _request, reply) => {
      const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      if (status === 500) {
        log.error({ err }, 'webhook listener error');
        return reply.code(500).send({ error: 'internal' });
      }
      const reason =
        status === 413 ? 'body_too_large' : status === 415 ? 'unsupported_media_type' : (err.code ?? 'bad_request').toLowerCase();
      return refuse(reply, status, ErrorCodes.WEBHOOK_MALFORMED, reason);
    });
    app = server;
    return server;
  }

  return {
    async start() {
      const { url, port } = await served.start(build());
      log.info({ url, path }, 'webhook listener ready');
      return { url, port };
    },
    stop() {
      // Stop accepting first, then let fastify finish what is in flight.
      stopping ??= served.stop(app);
      return stopping;
    },
    inject: ((...args: Parameters<FastifyInstance['inject']>) =>
      (build().inject as (...a: unknown[]) => unknown)(...args)) as FastifyInstance['inject'],
  };
}
