import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ErrorCodes, VendgateError } from './errors.js';
import { firstFreePort, movePortAdvice } from './free-port.js';

/**
 * The limits every listener applies to its clients, so that nobody can hold one open: a client that
 * sends its headers or body slowly, or sits idle, is cut within seconds.
 */
export interface ListenerLimits {
  /** The request line and headers must arrive within this. */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this (a body dripped byte by byte is cut). */
  requestTimeoutMs: number;
  /** A connection with no traffic either way for this long is closed. */
  idleTimeoutMs: number;
  /** A kept-alive connection waits this long for its next request. */
  keepAliveTimeoutMs: number;
  /** Requests served on one connection before it is closed (0: no limit). */
  maxRequestsPerSocket: number;
  /** Open connections at most; a new one beyond it pushes out the most suspicious one (0: no limit). */
  maxConnections: number;
}

export interface ListenerAddress {
  host: string;
  port: number;
  /** The setting that names the port, for the message when it is taken ("http.webhook.port"). */
  portSetting: string;
}

export class PortInUseError extends VendgateError {
  readonly port: number;
  readonly setting: string;

  constructor(address: ListenerAddress, cause: unknown, free: number | null = null) {
    super(
      ErrorCodes.PORT_IN_USE,
      `${address.portSetting}: port ${address.port} on ${address.host} is already in use by another program: ` +
        `${movePortAdvice(address.portSetting, address.port, free)}, or stop it (sudo ss -ltnp 'sport = :${address.port}' shows which). ` +
        'Nothing was started and the database was not touched.',
      { cause, details: { port: address.port, host: address.host, setting: address.portSetting } },
    );
    this.name = 'PortInUseError';
    this.port = address.port;
    this.setting = address.portSetting;
  }
}

export interface BoundListener {
  readonly server: Server;
  readonly port: number;
  /** http://host:port, with 127.0.0.1 for a wildcard bind. */
  readonly url: string;
  /** From now on requests go to `handler`; until then they are answered 503 (starting up). */
  serve(handler: (request: IncomingMessage, response: ServerResponse) => void): void;
  /** Stops accepting, closes idle connections now and every other one after `graceMs`. Safe twice. */
  close(graceMs?: number): Promise<void>;
}

/** What `servedOn` needs of an app: a fastify instance, named by its shape (util/ imports no fastify). */
export interface RoutedApp {
  ready(): PromiseLike<unknown>;
  readonly routing: (request: IncomingMessage, response: ServerResponse) => void;
  close(): PromiseLike<unknown>;
}

/**
 * An app served on a listener that is bound when it first starts (or was bound before and handed
 * in): `start` binds once, waits for the app and hands it the requests; `stop` stops accepting
 * first, then lets the app (when it was built) finish what is in flight.
 */
export function servedOn(bind: () => Promise<BoundListener>, bound: BoundListener | null = null) {
  let listener = bound;
  return {
    /** Where it listens once serving. */
    async start(app: RoutedApp): Promise<{ url: string; port: number }> {
      listener ??= await bind();
      await app.ready();
      listener.serve(app.routing);
      return { url: listener.url, port: listener.port };
    },
    async stop(app: RoutedApp | null): Promise<void> {
      const closed = listener?.close();
      if (app) await app.close();
      await closed;
    },
  };
}

/** How often Node checks the header and request timeouts (its default, 30 s, is what let a drip-fed body live). */
const TIMEOUT_CHECK_INTERVAL_MS = 500;

/**
 * Binds a port with the limits applied, before the rest of the service exists: the process owns
 * both ports (or stops with PortInUseError) before the database is opened, and requests that arrive
 * during start-up recovery get a 503 the provider retries instead of a refused connection.
 */
export async function bindListener(address: ListenerAddress, limits: ListenerLimits): Promise<BoundListener> {
  const server = createServer({
    connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, limits.headersTimeoutMs, limits.requestTimeoutMs),
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
  });
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  // Node destroys a socket idle this long when nobody listens for 'timeout'.
  server.setTimeout(limits.idleTimeoutMs);
  const sockets = trackForCap(server, limits.maxConnections);
  let handler: ((request: IncomingMessage, response: ServerResponse) => void) | null = null;
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (handler) return handler(request, response);
    response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' });
    response.end(JSON.stringify({ error: { code: ErrorCodes.STARTING, message: 'starting up; try again in a second' } }));
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      if (err.code !== 'EADDRINUSE') return reject(err);
      // The message names a port free right now, so the one line says exactly what to type.
      void firstFreePort(address.host, address.port + 1).then(
        (free) => reject(new PortInUseError(address, err, free)),
        () => reject(new PortInUseError(address, err)),
      );
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ host: address.host, port: address.port });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = address.host === '0.0.0.0' || address.host === '::' ? '127.0.0.1' : address.host;
  let closing: Promise<void> | null = null;

  return {
    server,
    port,
    url: `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${port}`,
    serve(next) {
      handler = next;
    },
    close(graceMs = 2_000) {
      closing ??= new Promise<void>((resolve) => {
        const cutOff = setTimeout(() => {
          for (const socket of sockets.keys()) socket.destroy();
        }, graceMs);
        cutOff.unref();
        server.close(() => {
          clearTimeout(cutOff);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}

/** The webhook listener faces the internet through the tunnel: tight limits, a connection cap. */
export const WEBHOOK_LISTENER_DEFAULTS: Readonly<ListenerLimits> = Object.freeze({
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  idleTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 1_000,
  maxConnections: 128,
});

/** The local listener: the same timeouts, but idle connections live longer than the SSE ping (15 s). */
export const LOCAL_LISTENER_DEFAULTS: Readonly<ListenerLimits> = Object.freeze({
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 1_000,
  maxConnections: 0,
});

/** The limit fields of a listener's settings section. */
export function listenerLimits(section: Readonly<ListenerLimits>): ListenerLimits {
  const { headersTimeoutMs, requestTimeoutMs, idleTimeoutMs, keepAliveTimeoutMs, maxRequestsPerSocket, maxConnections } = section;
  return { headersTimeoutMs, requestTimeoutMs, idleTimeoutMs, keepAliveTimeoutMs, maxRequestsPerSocket, maxConnections };
}

interface Connection {
  /** The request being received or answered on it, if any. */
  current: IncomingMessage | null;
  /** Requests answered on it so far. */
  served: number;
  /** Since when it is in its present state (connected, request started, idle again). */
  since: number;
}

/**
 * The connection cap. At the cap a new connection pushes out one that is most likely hostile: first
 * the oldest that never completed its headers or is still sending its body (slowloris), then the
 * oldest idle keep-alive one, and only when every connection is being answered the oldest of
 * those. An idle kept-alive connection of a real client (cloudflared, a provider) is thus not cut
 * while a crowd of slow clients holds the rest.
 */
function trackForCap(server: Server, maxConnections: number): Map<Socket, Connection> {
  const connections = new Map<Socket, Connection>();
  const victim = (): Socket | undefined => {
    let best: { socket: Socket; rank: number; since: number } | undefined;
    for (const [socket, c] of connections) {
      const rank = c.current === null ? (c.served === 0 ? 0 : 1) : c.current.complete ? 2 : 0;
      if (!best || rank < best.rank || (rank === best.rank && c.since < best.since)) best = { socket, rank, since: c.since };
    }
    return best?.socket;
  };
  server.on('connection', (socket: Socket) => {
    if (maxConnections > 0 && connections.size >= maxConnections) {
      const out = victim();
      if (out) {
        connections.delete(out);
        out.destroy();
      }
    }
    connections.set(socket, { current: null, served: 0, since: performance.now() });
    socket.once('close', () => connections.delete(socket));
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const c = connections.get(request.socket);
    if (!c) return;
    c.current = request;
    c.since = performance.now();
    response.once('finish', () => {
      c.current = null;
      c.served += 1;
      c.since = performance.now();
    });
  });
  return connections;
}
