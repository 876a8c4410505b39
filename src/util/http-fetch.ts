/**
 * The part of fetch the provider clients use (payments/http.ts), on node:http and node:https.
 *
 * Node's own fetch is undici: about a megabyte of JavaScript that brings web streams, HTTP/2, TLS
 * and zlib with it. On Node 22, 200 calls with it leave ~5 MB more RSS than the same calls made
 * here (scripts/bench/http-client.mjs: 13.8 against 8.5 MB, docs/benchmarks.md), and a device calls
 * its provider on every order and every poll. This is what those calls need:
 * one request with a string body, its answer's status, headers and text, a timeout through an
 * AbortSignal, and kept-alive connections, so that a poll every second does not cost a TLS
 * handshake each time on a Pi's slow cores.
 *
 * It keeps fetch's shape where the client reads it: a failure before an answer is a TypeError
 * "fetch failed" whose `cause` is Node's error (its `code`: ECONNREFUSED, ENOTFOUND, ECONNRESET…);
 * the end of the signal rejects with the signal's reason (a TimeoutError for AbortSignal.timeout),
 * while connecting, waiting or reading the body; redirects are never followed (fetch's "manual").
 * Tests give the client their own fetch through the same type.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';

/** The answer's headers: fetch's Headers.get (a repeated header comes joined by ", "). */
export interface AnswerHeaders {
  get(name: string): string | null;
}

/** What the callers read of an answer: what fetch's Response has of it. */
export interface FetchAnswer {
  readonly status: number;
  readonly headers: AnswerHeaders;
  text(): Promise<string>;
}

/** One request, as the callers build it: a subset of fetch's RequestInit. */
export interface FetchInit {
  method: string;
  headers?: Record<string, string>;
  /** A string is sent as UTF-8. */
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /** Only "manual": a redirect is handed back as it came, as fetch does with "manual". */
  redirect?: 'manual';
}

/** fetch, or this module's httpFetch: what the provider clients call. */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchAnswer>;

/**
 * An idle kept-alive connection is closed after this long: a server that closed it first would
 * make the next request on it fail (the callers retry what is safe to retry), so the connection is
 * let go before the usual server timeouts of 5 s and more, as undici does with 4 s.
 */
export const IDLE_CONNECTION_MS = 4_000;

type Request = (url: URL, options: RequestOptions) => import('node:http').ClientRequest;
interface Transport {
  request: Request;
  agent: HttpAgent;
}
let plain: Transport | null = null;
let secure: Promise<Transport> | null = null;

/** node:http, or node:https loaded on the first https call (once): a device on http:// never loads TLS for it. */
function transport(url: URL): Transport | Promise<Transport> {
  if (url.protocol === 'http:')
    return (plain ??= { request: httpRequest, agent: new HttpAgent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }) });
  if (url.protocol !== 'https:') throw new Error(`${url.protocol} is not http: or https:`);
  return (secure ??= import('node:https').then((https) => ({
    request: https.request,
    agent: new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  })));
}

/** fetch's TypeError for a request that got no complete answer. */
function failed(cause: unknown): TypeError {
  return new TypeError('fetch failed', { cause });
}

export const httpFetch: FetchLike = async (url, init) => {
  const { signal } = init;
  signal?.throwIfAborted();
  const target = new URL(url);
  let via: Transport;
  try {
    via = await transport(target);
  } catch (err) {
    throw failed(err);
  }
  signal?.throwIfAborted();
  const body = typeof init.body === 'string' ? Buffer.from(init.body, 'utf8') : init.body;
  const headers: Record<string, string> = { 'user-agent': 'node', ...init.headers };
  if (body) headers['content-length'] = String(body.byteLength);

  return new Promise<FetchAnswer>((resolve, reject) => {
    const req = via.request(target, { method: init.method, headers, agent: via.agent });
    let settle = reject;
    const onAbort = (): void => {
      settle(signal?.reason);
      req.destroy();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (): void => signal?.removeEventListener('abort', onAbort);
    req.once('error', (err) => {
      finish();
      settle(failed(err));
    });
    req.once('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let ended = false;
      // The body is read at once, under the same signal: an answer that stalls halfway times out.
      const bodyText = new Promise<string>((resolveBody, rejectBody) => {
        settle = rejectBody;
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('end', () => {
          ended = true;
          finish();
          resolveBody(new TextDecoder().decode(Buffer.concat(chunks)));
        });
        res.once('error', (err) => {
          finish();
          rejectBody(failed(err));
        });
        res.once('close', () => {
          if (ended) return;
          finish();
          rejectBody(failed(new Error('the connection closed before the answer ended')));
        });
      });
      // A caller that never reads the text must not leave an unhandled rejection behind.
      bodyText.catch(() => {});
      resolve({
        status: res.statusCode ?? 0,
        headers: {
          get(name) {
            const value = res.headers[name.toLowerCase()];
            if (value === undefined) return null;
            return Array.isArray(value) ? value.join(', ') : value;
          },
        },
        text: () => bodyText,
      });
    });
    req.end(body);
  });
};
