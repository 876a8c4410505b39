import Fastify, { type FastifyInstance } from 'fastify';
import { fileURLToPath } from 'node:url';
import type { KioskDeps } from './types.js';
import type { Clock, Logger } from '../util/index.js';
import { createQrRenderer } from './qr.js';
import { installErrorHandling } from './http-errors.js';
import { registerApiRoutes } from './api-routes.js';
import { registerSlotRoutes } from './slot-routes.js';
import { registerServiceRoutes } from './service-routes.js';
import type { ServiceAuthSettings } from './service-auth.js';
import { DEFAULT_SSE_PING_MS, registerEventRoutes, type EventStreams } from './events.js';
import { registerSandboxRoutes } from './sandbox-routes.js';
import { registerStaticFiles } from './static-files.js';
import { SECURITY_HEADERS } from './security-headers.js';
import { STOP_GRACE_MS, trackConnections } from './connections.js';
import { installRequestGuard } from './request-guard.js';
import { createOrderPress, ORDER_PRESS_DEFAULTS } from './order-press.js';
import { bindListener, LOCAL_LISTENER_DEFAULTS, type BoundListener, type ListenerLimits } from '../util/http-listener.js';
import { NO_JSON_SCHEMAS } from '../util/fastify-schemas.js';

/** An order body is `{"slot":"A1"}`; anything near this size is not one. */
export const DEFAULT_BODY_LIMIT_BYTES = 4_096;

export interface KioskServerSettings {
  /** 127.0.0.1 unless the page runs on another machine; never exposed through the tunnel. */
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  bodyLimitBytes?: number;
  /** Interval of the SSE keep-alive comment. */
  ssePingMs?: number;
  /** Timeouts and keep-alive limits; LOCAL_LISTENER_DEFAULTS without them. */
  limits?: ListenerLimits;
  /** Host names besides 127.0.0.1/localhost/::1 the page may be opened under. */
  allowedHosts?: readonly string[];
  doublePressWindowMs?: number;
  ordersPerMinute?: number;
  /** The service menu's lock-out and idle limits (tests); SERVICE_AUTH_DEFAULTS without them. */
  serviceAuth?: ServiceAuthSettings;
}

export interface KioskServer {
  /** Listens; resolves with the address actually bound. */
  start(): Promise<{ url: string; port: number }>;
  /** Ends SSE streams and closes the listener. Safe to call twice, and before start(). */
  stop(): Promise<void>;
  /** fastify's inject(): requests without a socket, for tests. */
  inject: FastifyInstance['inject'];
}

const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url));
const LIVE_PATHS = /^\/(api\/|healthz|metrics)/;

export function createKioskServer(
  /** `listener`: the port, bound before the database was opened (app start order); start() binds one without it. */
  deps: KioskDeps & { logger: Logger; clock: Clock; listener?: BoundListener },
  settings: KioskServerSettings,
): KioskServer {
  const log = deps.logger.child({ module: 'kiosk' });
  const bodyLimit = settings.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  let built: { app: FastifyInstance; streams: EventStreams } | undefined;
  let listener: BoundListener | undefined = deps.listener;
  let connections: ReturnType<typeof trackConnections> | undefined;
  let stopping: Promise<void> | undefined;

  // Built on first use, not here: constructors do nothing.
  function build() {
    if (built) return built;
    const app = Fastify({ logger: false, bodyLimit, forceCloseConnections: false, schemaController: NO_JSON_SCHEMAS });
    // Only JSON bodies are accepted; fastify's default text/plain parser would turn "wrong content type" into a 400.
    app.removeContentTypeParser('text/plain');
    // An empty JSON body is "nothing to say" (a cancel from curl), not an error; the create route still wants an object.
    const jsonParser = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (body === '') return done(null, undefined);
      return jsonParser(request, body as string, done);
    });
    installErrorHandling(app, log, bodyLimit);
    installRequestGuard(app, { host: settings.host, allowedHosts: settings.allowedHosts });
    app.addHook('onSend', async (request, reply, payload) => {
      reply.headers(SECURITY_HEADERS);
      // Live answers must never come from a cache after a restart.
      if (LIVE_PATHS.test(request.url) && reply.getHeader('cache-control') === undefined) reply.header('cache-control', 'no-store');
      return payload;
    });
    const qr = createQrRenderer();
    const press = createOrderPress(
      { orders: deps.orders, clock: deps.clock },
      {
        doublePressWindowMs: settings.doublePressWindowMs ?? ORDER_PRESS_DEFAULTS.doublePressWindowMs,
        ordersPerMinute: settings.ordersPerMinute ?? ORDER_PRESS_DEFAULTS.ordersPerMinute,
      },
    );
    registerApiRoutes(app, deps, qr, press);
    if (deps.slots) registerSlotRoutes(app, deps.slots);
    if (deps.service) registerServiceRoutes(app, deps.service, deps.clock, settings.serviceAuth);
    const streams = registerEventRoutes(app, deps, qr, log, settings.ssePingMs ?? DEFAULT_SSE_PING_MS);
    if (deps.sandbox) registerSandboxRoutes(app, deps.sandbox, deps.clock);
    // Hijacked SSE responses and spare browser connections would keep close() waiting.
    app.addHook('preClose', async () => {
      streams.closeAll();
      connections?.closeIdle();
    });
    registerStaticFiles(app, PUBLIC_DIR);
    built = { app, streams };
    return built;
  }

  return {
    async start() {
      const { app } = build();
      listener ??= await bindListener(
        { host: settings.host, port: settings.port, portSetting: 'http.local.port' },
        settings.limits ?? LOCAL_LISTENER_DEFAULTS,
      );
      connections = trackConnections(listener.server);
      await app.ready();
      listener.serve(app.routing);
      log.info({ host: settings.host, port: listener.port }, 'local listener started');
      const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
      return { url: `http://${host}:${listener.port}`, port: listener.port };
    },
    stop() {
      stopping ??= (async () => {
        if (!built) {
          await listener?.close();
          return;
        }
        const { app } = built;
        const cutOff = setTimeout(() => connections?.closeAll(), STOP_GRACE_MS);
        try {
          const closed = listener?.close(STOP_GRACE_MS);
          await app.close();
          await closed;
        } finally {
          clearTimeout(cutOff);
        }
        log.info({}, 'local listener stopped');
      })();
      return stopping;
    },
    inject: ((...args: Parameters<FastifyInstance['inject']>) =>
      (build().app.inject as (...a: unknown[]) => unknown)(...args)) as FastifyInstance['inject'],
  };
}
