/**
 * One HTTP call to a fiscal register, told apart by whether the request reached it: the question a
 * receipt's retry depends on. node:http rather than fetch, because fetch cannot say whether a
 * failure came before or after the connection was made:
 *
 * - `unreached`: no connection was made (connection refused, DNS, no route, a timeout or a TLS
 *   failure while connecting). No byte of the request left: the register cannot have acted on it.
 * - `lost`: the connection was made and no complete answer came (timeout, connection reset, a body
 *   cut off). The register may have acted on it: once connected, "the request was not completely
 *   sent" cannot be told for sure (the kernel may have passed the last bytes on before Node says so).
 * - `answer`: a complete HTTP answer; the caller reads the register's words.
 *
 * Every call opens its own connection (no keep-alive): a reused socket the register closed
 * meanwhile would turn a request that never arrived into an ambiguous one. Receipts are one per
 * vend, so the extra handshake costs nothing that matters. Messages name the `what` given (register,
 * method, path), never the URL: a PosAPI address is a secret place.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

export type RegisterCall =
  | { kind: 'answer'; status: number; body: unknown; text: string }
  | { kind: 'unreached'; message: string }
  | { kind: 'lost'; message: string };

export interface RegisterCallRequest {
  /** Full URL (base URL + path). */
  url: string;
  method: 'GET' | 'POST' | 'DELETE';
  /** Serialised as JSON; absent: no body. */
  json?: unknown;
  headers?: Record<string, string>;
  /** Bound on the whole call: connecting, sending and reading the answer. */
  timeoutMs: number;
  /** How the call is named in messages: "PosAPI POST /rest/receipt". */
  what: string;
}

/** The most of an answer kept (registers answer a few kilobytes). */
const MAX_ANSWER_BYTES = 1024 * 1024;

export function callRegister(req: RegisterCallRequest): Promise<RegisterCall> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      resolve({ kind: 'unreached', message: `${req.what}: the register URL is not a valid URL` });
      return;
    }
    const body = req.json === undefined ? undefined : Buffer.from(JSON.stringify(req.json), 'utf8');
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    if (body) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(body.length);
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    /** The connection (TLS included) was made: from here on, the register may have the request. */
    let connected = false;
    let settled = false;
    let client: ClientRequest;

    const finish = (result: RegisterCall) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const failed = (reason: string) =>
      finish(
        connected
          ? { kind: 'lost', message: `${req.what}: the request was sent and no complete answer came (${reason})` }
          : { kind: 'unreached', message: `${req.what}: the register was not reached (${reason})` },
      );

    const timer = setTimeout(() => {
      failed(`no answer within ${req.timeoutMs} ms`);
      client.destroy();
    }, req.timeoutMs);

    try {
      client = send(url, { method: req.method, headers, agent: false });
    } catch (err) {
      clearTimeout(timer);
      resolve({ kind: 'unreached', message: `${req.what}: the request could not be made (${describe(err)})` });
      return;
    }
    client.on('socket', (socket) => {
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
        connected = true;
      });
    });
    client.on('error', (err) => failed(describe(err)));
    client.on('response', (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
      });
      response.on('error', (err) => failed(describe(err)));
      response.on('aborted', () => failed('the answer was cut off'));
      response.on('end', () => {
        if (!response.complete) return failed('the answer was cut off');
        const text = Buffer.concat(chunks).toString('utf8');
        finish({ kind: 'answer', status: response.statusCode ?? 0, body: parseJson(text), text });
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

/** What an answer's body looked like, for a message: never the body itself (it may carry QR data). */
export function describeAnswer(call: { status: number; text: string }): string {
  return `HTTP ${call.status}, ${call.text.length} bytes`;
}
