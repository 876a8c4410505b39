/**
 * The one fleet URL in front of the relay replicas: round robin; a replica that refuses the
 * connection is skipped (what a load balancer's health check does) and the request goes to the
 * next; when none answers, 502 (the provider retries).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoadBalancer {
  url: string;
  /** How many requests each backend answered. */
  answered: Map<number, number>;
  close(): Promise<void>;
}

export async function startLoadBalancer(backendPorts: () => number[]): Promise<LoadBalancer> {
  let next = 0;
  const answered = new Map<number, number>();

  function forward(
    port: number,
    req: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer } | null> {
    return new Promise((resolve) => {
      const upstream = httpRequest(
        { host: '127.0.0.1', port, method: req.method, path: req.url, headers: { ...req.headers, host: `127.0.0.1:${port}` } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 502,
              headers: { 'content-type': String(res.headers['content-type'] ?? 'application/json') },
              body: Buffer.concat(chunks),
            }),
          );
          res.on('error', () => resolve({ status: 502, headers: {}, body: Buffer.alloc(0) }));
        },
      );
      // Refused before anything was sent: safe to try the next replica.
      upstream.on('error', (err: NodeJS.ErrnoException) =>
        resolve(err.code === 'ECONNREFUSED' ? null : { status: 502, headers: {}, body: Buffer.alloc(0) }),
      );
      upstream.end(body);
    });
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const ports = backendPorts();
      for (let i = 0; i < ports.length; i += 1) {
        const port = ports[(next + i) % ports.length]!;
        const answer = await forward(port, req, body);
        if (!answer) continue;
        next = (next + i + 1) % ports.length;
        answered.set(port, (answered.get(port) ?? 0) + 1);
        res.writeHead(answer.status, answer.headers).end(answer.body);
        return;
      }
      res.writeHead(502).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answered,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
