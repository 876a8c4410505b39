/**
 * The relay's Kaspi listener (`relay.kaspi`): the device API of docs/providers.md ("Kaspi QR"),
 * on its own port with its own limits, apart from the webhook listener. Every request is
 * authenticated by its device's HMAC (payments/kaspi relay-auth) before anything else happens, is
 * held to a per-device rate, and leaves one audit line (device, action, object, outcome, time) —
 * never a token, secret or QR payload. Counters for the stats line and the metrics.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from '../util/logger.js';
import { NO_JSON_SCHEMAS } from '../util/fastify-schemas.js';
import { bindListener, servedOn, type ListenerLimits } from '../util/http-listener.js';
import { KASPI_RELAY_ERRORS, verifyKaspiRelayRequest } from '../payments/adapters.js';
import type { KaspiAnswer, KaspiCaller } from './kaspi-caller.js';

export interface KaspiDevice {
  /** Kaspi's device token of this machine (registered to a trade point). */
  deviceToken: string;
  /** The device's relay secrets, all accepted (rotation). */
  secrets: readonly string[];
}

export interface KaspiServerSettings extends ListenerLimits {
  host: string;
  port: number;
  bodyLimitBytes: number;
  /** Calls one device may make per minute (a QR polled every 2 s is 30). */
  maxCallsPerDevicePerMinute: number;
  toleranceSec: number;
}

export interface KaspiCounters {
  calls: Record<string, number>;
  authRefused: number;
  rateLimited: number;
  kaspi: Record<string, number>;
}

export function createKaspiCounters(): KaspiCounters {
  return { calls: {}, authRefused: 0, rateLimited: 0, kaspi: {} };
}

export function createKaspiServer(
  deps: { caller: KaspiCaller; devices: ReadonlyMap<string, KaspiDevice>; counters: KaspiCounters; logger: Logger; now: () => number },
  settings: KaspiServerSettings,
) {
  const { caller, devices, counters } = deps;
  const log = deps.logger.child({ module: 'relay-kaspi' });
  const windows = new Map<string, { start: number; count: number }>();
  let lastAuthWarn = -Infinity;
  let app: FastifyInstance | null = null;
  const served = servedOn(() => bindListener({ host: settings.host, port: settings.port, portSetting: 'relay.kaspi.port' }, settings));

  function overRate(deviceId: string): boolean {
    const now = deps.now();
    const w = windows.get(deviceId);
    if (!w || now - w.start >= 60_000) {
      windows.set(deviceId, { start: now, count: 1 });
      return false;
    }
    w.count += 1;
    return w.count > settings.maxCallsPerDevicePerMinute;
  }

  async function handle(
    action: string,
    request: FastifyRequest,
    reply: FastifyReply,
    run: (deviceId: string, body: unknown) => Promise<KaspiAnswer>,
  ): Promise<FastifyReply> {
    const started = performance.now();
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const auth = verifyKaspiRelayRequest(
      request.headers,
      {
        method: request.method,
        pathWithQuery: request.url,
        body: raw.toString('utf8'),
        nowMs: deps.now(),
        toleranceSec: settings.toleranceSec,
      },
      (deviceId) => devices.get(deviceId)?.secrets,
    );
    if (!auth.ok) {
      counters.authRefused += 1;
      if (deps.now() - lastAuthWarn > 10_000) {
        lastAuthWarn = deps.now();
        log.warn({ reason: auth.reason, action, refusedSoFar: counters.authRefused }, 'kaspi call refused: device not authenticated');
      }
      return reply
        .code(401)
        .send({ error: { code: KASPI_RELAY_ERRORS.unauthenticated, message: 'the device signature is missing, stale or not accepted' } });
    }
    const deviceId = auth.deviceId;
    if (overRate(deviceId)) {
      counters.rateLimited += 1;
      log.info({ audit: 'kaspi', deviceId, action, outcome: 'rate_limited' }, 'kaspi call');
      return reply
        .code(429)
        .header('retry-after', '5')
        .send({ error: { code: 'rate_limited', message: 'too many calls from this device' } });
    }
    let body: unknown = undefined;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return reply.code(400).send({ error: { code: KASPI_RELAY_ERRORS.invalid, message: 'the body is not JSON' } });
      }
    }
    const answer = await run(deviceId, body);
    const key = `${action}:${answer.outcome}`;
    counters.calls[key] = (counters.calls[key] ?? 0) + 1;
    const id = (request.params as { id?: string } | undefined)?.id;
    log.info(
      {
        audit: 'kaspi',
        deviceId,
        action,
        ...(id ? { qrPaymentId: id } : {}),
        ...(action === 'create' && typeof (body as { externalId?: unknown })?.externalId === 'string'
          ? { externalId: (body as { externalId: string }).externalId }
          : {}),
        outcome: answer.outcome,
        httpStatus: answer.status,
        ms: Math.round(performance.now() - started),
      },
      'kaspi call',
    );
    return reply
      .code(answer.status)
      .headers({ 'cache-control': 'no-store', ...(answer.headers ?? {}) })
      .send(answer.body);
  }

  function build(): FastifyInstance {
    if (app) return app;
    const server = Fastify({ logger: false, bodyLimit: settings.bodyLimitBytes, schemaController: NO_JSON_SCHEMAS });
    server.removeAllContentTypeParsers();
    server.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: settings.bodyLimitBytes }, (_request, body, done) =>
      done(null, body),
    );
    const id = (request: FastifyRequest) => (request.params as { id: string }).id;
    server.post('/kaspi/v1/qr', (request, reply) => handle('create', request, reply, (d, body) => caller.create(d, body)));
    server.get('/kaspi/v1/payments/:id', (request, reply) => handle('read', request, reply, (d) => caller.read(d, id(request))));
    server.post('/kaspi/v1/payments/:id/cancel', (request, reply) =>
      handle('cancel', request, reply, (d) => caller.cancel(d, id(request))),
    );
    server.post('/kaspi/v1/payments/:id/returns', (request, reply) =>
      handle('return', request, reply, (d, body) => caller.giveBack(d, id(request), body)),
    );
    server.get('/kaspi/v1/ping', (request, reply) => handle('ping', request, reply, (d) => caller.ping(d)));
    server.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: { code: 'not_found', message: 'no such route' } }));
    server.setErrorHandler((err: Error & { statusCode?: number }, _request, reply) => {
      const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      if (status === 500) log.error({ err }, 'kaspi listener error');
      return reply.code(status).send({
        error: {
          code: status === 500 ? 'internal' : KASPI_RELAY_ERRORS.invalid,
          message: status === 413 ? 'body too large' : 'bad request',
        },
      });
    });
    app = server;
    return server;
  }

  return {
    start: async (): Promise<{ url: string; port: number }> => served.start(build()),
    stop: (): Promise<void> => served.stop(app),
  };
}

export type KaspiServer = ReturnType<typeof createKaspiServer>;
