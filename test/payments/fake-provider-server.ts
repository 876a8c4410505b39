/**
 * A scripted provider over a real loopback socket, for unit tests of the HTTP client and the
 * adapters. Each request is recorded; the handler decides the reply, including the failures that
 * only exist on a real socket (connection dropped, no answer, body cut short).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { expect } from 'vitest';
import { WebhookVerificationError, type CreateInvoiceRequest } from '../../src/payments/types.js';
import { createLogger, createManualClock } from '../../src/util/index.js';

export interface RecordedRequest {
  method: string;
  /** Path and query. */
  url: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Reply =
  | { status: number; headers?: Record<string, string>; json?: unknown; text?: string }
  /** Close the socket after reading the request: a lost response. */
  | { drop: true }
  /** Never answer (until the server stops). */
  | { hang: true }
  /** Announce a longer body than is sent, then close: a body cut short. */
  | { status: number; partial: string };

export type Handler = (request: RecordedRequest, index: number) => Reply | Promise<Reply>;

export interface FakeProviderServer {
  url: string;
  requests: RecordedRequest[];
  setHandler(handler: Handler): void;
  stop(): Promise<void>;
}

export async function startFakeProviderServer(initial: Handler): Promise<FakeProviderServer> {
  let handler = initial;
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(recorded);
      void Promise.resolve(handler(recorded, requests.length - 1)).then((reply) => send(req, res, reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setHandler(next) {
      handler = next;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  if ('drop' in reply) {
    req.socket.destroy();
    return;
  }
  if ('hang' in reply) return;
  if ('partial' in reply) {
    res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': String(reply.partial.length + 100) });
    res.write(reply.partial, () => req.socket.destroy());
    return;
  }
  const body = reply.json !== undefined ? JSON.stringify(reply.json) : (reply.text ?? '');
  const contentType = reply.json !== undefined ? 'application/json' : 'text/html';
  res.writeHead(reply.status, { 'content-type': contentType, ...reply.headers });
  res.end(body);
}

/** Sleep that advances a manual clock instantly and records every delay. */
export function recordingSleep(clock: { advance(ms: number): void }): { sleep: (ms: number) => Promise<void>; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms) => {
      delays.push(ms);
      clock.advance(ms);
    },
  };
}

/** What an adapter under test is built with: a manual clock, a debug logger whose lines land in `logs`, recorded sleeps, random() 0.5. */
export function adapterDeps() {
  const clock = createManualClock();
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const deps = { clock, logger: createLogger({ level: 'debug', destination }), sleep: recordingSleep(clock).sleep, random: () => 0.5 };
  return { clock, logs, deps };
}

/** The reason of the WebhookVerificationError that `verify` throws; fails the test when it throws anything else or nothing. */
export function refusalReason(verify: () => unknown): string {
  try {
    verify();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
  throw new Error('expected a WebhookVerificationError');
}

/** An invoice request for the adapters' tests: order 7 of vm-1 on database db1, automatic capture, two minutes. */
export function invoiceRequest(amount: number, currency: string, description: string): CreateInvoiceRequest {
  return {
    idempotencyKey: 'vm-1-db1-7-pay',
    reference: 'vm-1-7',
    amount,
    currency,
    description,
    expiresInSec: 120,
    captureMode: 'automatic',
  };
}
