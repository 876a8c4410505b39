import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from '../util/index.js';
import type { ApiResult, ApiRoute, ProviderBackend, SimContext } from './context.js';
import { drawRequestFaults, type RequestFaults } from './faults.js';
import { SimHttpError } from './request-checks.js';
import { registerAdminRoutes, type AdminActions } from './admin-routes.js';
import { mountRegister, type SimRegister } from './register-mount.js';
import type { Random } from './random.js';
import { NO_JSON_SCHEMAS } from '../util/fastify-schemas.js';

const NO_REQUEST_FAULTS: RequestFaults = { reject: null, lostResponse: false };

export interface ServerDeps {
  ctx: SimContext;
  backend: ProviderBackend;
  admin: AdminActions;
  logger: Logger;
  /** Sockets of requests held open by the timeout fault; the simulator destroys them on stop. */
  heldSockets: Set<Socket>;
  /** Fiscal registers served beside the provider, each behind its own faults (register-mount.ts). */
  registers?: SimRegister[];
  /** The registers' fault draws, a stream apart from the provider's. */
  registerRandom?: Random;
  /** Serve TLS, asking every client for a certificate signed by `ca` (Kaspi's strong scheme): without one the handshake fails. */
  tls?: SimulatorTls;
}

export interface SimulatorTls {
  key: string | Buffer;
  cert: string | Buffer;
  /** The CA client certificates must be signed by. */
  ca: string | Buffer;
}

/** The fastify app: provider routes behind the fault wrapper, plus the /__sim admin routes. */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const { ctx, backend, logger, heldSockets } = deps;
  const base = { logger: false, forceCloseConnections: true, bodyLimit: 64 * 1024, schemaController: NO_JSON_SCHEMAS } as const;
  const app = (
    deps.tls ? Fastify({ ...base, https: { ...deps.tls, requestCert: true, rejectUnauthorized: true } }) : Fastify(base)
  ) as FastifyInstance;
  const unanswered = new WeakSet<FastifyRequest>();

  // Lenient on empty bodies (cancel/capture are often sent without one), strict on malformed JSON.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new SimHttpError(400, 'invalid_request', 'the body is not valid JSON'), undefined);
    }
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  app.addHook('onResponse', async (request, reply) => {
    if (unanswered.has(request) || isAdmin(request) || isRegister(request)) return;
    ctx.records.requests.push({ method: request.method, path: pathOf(request), at: ctx.clock.now(), status: reply.statusCode });
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    if (err instanceof SimHttpError) {
      return reply.code(err.status).headers(err.headers).send(backend.errorBody(err.code, err.message));
    }
    const status = err.statusCode ?? 500;
    if (status < 500) return reply.code(status).send(backend.errorBody('invalid_request', err.message));
    logger.error({ err, method: request.method, path: pathOf(request) }, 'simulator route failed');
    return reply.code(500).send(backend.errorBody('server_error', 'internal simulator error'));
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(backend.errorBody('not_found', `no route ${request.method} ${pathOf(request)}`));
  });

  function leaveUnanswered(request: FastifyRequest, reply: FastifyReply, status: 'timeout' | 'lost'): void {
    reply.hijack();
    unanswered.add(request);
    ctx.records.requests.push({ method: request.method, path: pathOf(request), at: ctx.clock.now(), status });
    const socket = request.raw.socket;
    if (status === 'lost') {
      socket.destroy();
      return;
    }
    heldSockets.add(socket);
    socket.once('close', () => heldSockets.delete(socket));
  }

  function run(route: ApiRoute, request: FastifyRequest): ApiResult {
    try {
      return route.handler(request);
    } catch (err) {
      if (!(err instanceof SimHttpError)) throw err;
      return { status: err.status, body: backend.errorBody(err.code, err.message), headers: err.headers };
    }
  }

  for (const route of backend.routes()) {
    app.route({
      method: route.method,
      url: route.url,
      handler: async (request, reply) => {
        backend.sweep();
        const drawn =
          route.faults === false
            ? NO_REQUEST_FAULTS
            : drawRequestFaults(typeof route.faults === 'function' ? route.faults() : ctx.faults(), ctx.faultRandom);
        if (drawn.reject) {
          const { fault } = drawn.reject;
          route.onRejected?.(fault, request);
          logger.debug({ fault, method: request.method, path: pathOf(request) }, 'fault injected');
          if (fault === 'timeout') {
            leaveUnanswered(request, reply, 'timeout');
            return reply;
          }
          if (fault === 'rateLimit') {
            return reply.code(429).header('retry-after', '1').send(backend.errorBody('rate_limited', 'too many requests; retry after 1 s'));
          }
          return reply.code(drawn.reject.status!).send(backend.errorBody('server_error', 'simulated server error'));
        }
        const result = run(route, request);
        if (drawn.lostResponse) {
          // The work is committed; only the answer is lost, as when a connection drops mid-response.
          result.onLost?.();
          logger.debug({ fault: 'lostResponse', method: request.method, path: pathOf(request) }, 'fault injected');
          leaveUnanswered(request, reply, 'lost');
          return reply;
        }
        return reply
          .code(result.status)
          .headers(result.headers ?? {})
          .send(result.body);
      },
    });
  }

  registerAdminRoutes(app, { ctx, backend, admin: deps.admin });
  for (const register of deps.registers ?? []) {
    mountRegister(app, register, { clock: ctx.clock, faultRandom: deps.registerRandom ?? ctx.faultRandom, logger, heldSockets });
  }
  return app;
}

function pathOf(request: FastifyRequest): string {
  const index = request.url.indexOf('?');
  return index < 0 ? request.url : request.url.slice(0, index);
}

/** A fiscal register's call: recorded in that register's records, not the provider's. */
function isRegister(request: FastifyRequest): boolean {
  return (request.routeOptions.config as { register?: boolean } | undefined)?.register === true;
}

function isAdmin(request: FastifyRequest): boolean {
  return request.url.startsWith('/__sim/') || request.url === '/__sim';
}
