/**
 * One HTTP call told apart by whether the request can have reached the other side: the question
 * every retry of a call that is not idempotent (a fiscal receipt, a Kaspi create or return) depends
 * on. node:http rather than fetch, because fetch cannot say whether a failure came before or after
 * the connection was made:
 *
 * - `unreached`: no connection was made (connection refused, DNS, no route, a timeout or a TLS
 *   failure while connecting). No byte of the request left: the other side cannot have acted on it.
 * - `lost`: the connection was made and no complete answer came (timeout, connection reset, a body
 *   cut off). The other side may have acted on it: once connected, "the request was not completely
 *   sent" cannot be told for sure (the kernel may have passed the last bytes on before Node says so).
 * - `answer`: a complete HTTP answer; the caller reads its words.
 *
 * Every call opens its own connection (no keep-alive): a reused socket the other side closed
 * meanwhile would turn a request that never arrived into an ambiguous one. The callers word the
 * messages (fiscal/register-http.ts, fleet-relay/kaspi-client.ts), which never carry a URL or a secret.
 */
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';

export type HttpCall =
  | { kind: 'answer'; status: number; body: unknown; text: string; headers: IncomingHttpHeaders }
  | { kind: 'unreached'; message: string }
  | { kind: 'lost'; message: string };

export interface HttpCallRequest {
  method: string;
  /** Sent after `accept: application/json`; a JSON body adds its content type and length. */
  headers?: Record<string, string>;
  /** Serialised as JSON; absent: no body. */
  json?: unknown;
  /** Bound on the whole call: connecting, sending and reading the answer. */
  timeoutMs: number;
  /** The most of an answer kept. */
  maxAnswerBytes: number;
  /** TLS options of an https call (a client certificate, a CA). */
  tls?: Pick<RequestOptions, 'cert' | 'key' | 'ca'>;
  /**
   * A client certificate the server may refuse: TLS 1.3 completes the client's side of the
   * handshake before the server has checked it, and the refusal arrives as an alert. A server that
   * refused the certificate never read the request, so such an alert counts as not reached.
   */
  certificateMayBeRefused?: boolean;
  /** How the call is named in messages: "PosAPI POST /rest/receipt". */
  what: string;
  /** The messages of a failure, from its reason (the caller names the other side its own way). */
  unreached(reason: string): string;
  lost(reason: string): string;
}

export function callOnce(url: URL, req: HttpCallRequest): Promise<HttpCall> {
  return new Promise((resolve) => {
    const body = req.json === undefined ? undefined : Buffer.from(JSON.stringify(req.json), 'utf8');
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    if (body) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(body.length);
    }
    const secure = url.protocol === 'https:';
    /** The connection (TLS included) was made: from here on, the other side may have the request. */
    let connected = false;
    let settled = false;
    let client: ClientRequest;

    const finish = (result: HttpCall) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const failed = (reason: string) =>
      finish(connected ? { kind: 'lost', message: req.lost(reason) } : { kind: 'unreached', message: req.unreached(reason) });

    const timer = setTimeout(() => {
      failed(`no answer within ${req.timeoutMs} ms`);
      client.destroy();
    }, req.timeoutMs);

    try {
      const options = { method: req.method, headers, agent: false as const, ...(secure && req.tls ? req.tls : {}) };
      client = secure ? httpsRequest(url, options) : httpRequest(url, options);
    } catch (err) {
      clearTimeout(timer);
      resolve({ kind: 'unreached', message: `${req.what}: the request could not be made (${describe(err)})` });
      return;
    }
    client.on('socket', (socket) => {
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        connected = true;
      });
    });
    client.on('error', (err) => {
      if (req.certificateMayBeRefused && /^ERR_SSL_.*ALERT/.test(describe(err))) connected = false;
      failed(describe(err));
    });
    client.on('response', (response: IncomingMessage) => {
      // An answer means the connection held (a server that refuses a certificate may still answer first).
      connected = true;
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= req.maxAnswerBytes) chunks.push(chunk);
      });
      response.on('error', (err) => failed(describe(err)));
      response.on('aborted', () => failed('the answer was cut off'));
      response.on('end', () => {
        if (!response.complete) return failed('the answer was cut off');
        const text = Buffer.concat(chunks).toString('utf8');
        finish({ kind: 'answer', status: response.statusCode ?? 0, body: parseJson(text), text, headers: response.headers });
      });
    });
    client.end(body);
  });
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function describe(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return err instanceof Error ? err.message : String(err);
}
