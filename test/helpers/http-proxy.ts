import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpProxyOptions {
  /** The provider's answers carry a `Date` header this far from the real time (ms); 0 = the truth. */
  dateOffsetMs?: number;
}

/**
 * An HTTP proxy in front of the provider simulator, at the level the device sees: every answer's
 * `Date` header may be rewritten (a front end whose clock lies while the provider's own timestamps
 * in the bodies stay right), and requests whose path matches `refuse` get their connection reset
 * before an answer (an Events API, or everything, unreachable). The target may be set after the
 * proxy is listening (`target()`): requests wait for it.
 */
export async function startHttpProxy(options: HttpProxyOptions = {}) {
  let targetPort: number | null = null;
  const waiting: (() => void)[] = [];
  let refuse: RegExp | null = null;
  const seen: { method: string; path: string; date: string | null }[] = [];

  async function forward(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body: Buffer[] = [];
    for await (const chunk of request) body.push(chunk as Buffer);
    if (targetPort === null) await new Promise<void>((resolve) => waiting.push(resolve));
    if (refuse?.test(request.url ?? '')) {
      request.socket.destroy();
      return;
    }
    const upstream = httpRequest(
      { host: '127.0.0.1', port: targetPort!, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        const headers = { ...answer.headers };
        const date = options.dateOffsetMs ? new Date(Date.now() + options.dateOffsetMs).toUTCString() : (answer.headers.date ?? null);
        if (date) headers.date = date;
        seen.push({ method: request.method ?? '', path: request.url ?? '', date });
        response.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => request.socket.destroy());
    upstream.end(Buffer.concat(body));
  }

  const server: Server = createServer((request, response) => {
    forward(request, response).catch(() => request.socket.destroy());
  });
  // Node would answer with its own Date: the rewritten one must be the only one.
  server.on('request', (_request, response: ServerResponse) => {
    response.sendDate = false;
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    /** Where requests go (the simulator's URL); requests that came before wait for it. */
    target(url: string): void {
      targetPort = Number(new URL(url).port);
      for (const resolve of waiting.splice(0)) resolve();
    },
    /** Requests whose path matches are cut (connection reset) until `refuse(null)`. */
    refuse(pattern: RegExp | null): void {
      refuse = pattern;
    },
    /** Every answer passed on: method, path and the Date header it carried. */
    seen: () => seen,
    async stop(): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type HttpProxy = Awaited<ReturnType<typeof startHttpProxy>>;
