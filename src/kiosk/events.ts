import type { FastifyInstance } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { KioskDeps, DeviceState } from './types.js';
import type { QrRenderer } from './qr.js';
import { withQr } from './api-routes.js';
import { SECURITY_HEADERS } from './security-headers.js';
import type { Logger } from '../util/index.js';

/** Proxies and browsers drop a silent stream; a comment line keeps it open without waking the page. */
export const DEFAULT_SSE_PING_MS = 15_000;
/** Tells EventSource how soon to come back after a restart of the service. */
const CLIENT_RETRY_MS = 2_000;

export interface EventStreams {
  /** Open streams, for tests and metrics. */
  count(): number;
  /** Ends every stream; EventSource reconnects on its own once the service is back. */
  closeAll(): void;
}

/**
 * `GET /api/events`: one `state` event on connect, then one per change. Writes are chained per stream
 * so QR rendering (async) can never reorder two states.
 */
export function registerEventRoutes(app: FastifyInstance, deps: KioskDeps, qr: QrRenderer, log: Logger, pingMs: number): EventStreams {
  const streams = new Set<() => void>();

  // No HEAD twin: a HEAD would open a stream and a subscription that nobody reads.
  app.get('/api/events', { exposeHeadRoute: false }, (_request, reply) => {
    reply.hijack();
    const res: ServerResponse = reply.raw;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(`retry: ${CLIENT_RETRY_MS}\n\n`);

    let closed = false;
    let chain: Promise<void> = Promise.resolve();
    const push = (state: DeviceState) => {
      chain = chain
        .then(() => withQr(state, qr))
        .then((payload) => {
          if (!closed) res.write(`event: state\ndata: ${JSON.stringify(payload)}\n\n`);
        })
        .catch((err: unknown) => log.warn({ err }, 'state event not sent'));
    };

    // Read the state and subscribe in the same tick so no change falls between the two.
    push(deps.state());
    const unsubscribe = deps.subscribe(push);
    const ping = setInterval(() => {
      if (!closed) res.write(': ping\n\n');
    }, pingMs);
    ping.unref();

    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(ping);
      unsubscribe();
      streams.delete(close);
      if (!res.writableEnded) res.end();
    };
    streams.add(close);
    // The response, not the request: a GET request's 'close' fires as soon as its (empty) body is read.
    res.on('close', close);
    res.on('error', close);
  });

  return {
    count: () => streams.size,
    closeAll: () => {
      for (const close of [...streams]) close();
    },
  };
}
