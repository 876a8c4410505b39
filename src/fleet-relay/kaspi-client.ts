/**
 * One call from the relay to Kaspi's merchant API, told apart by whether the request can have
 * reached Kaspi (the question every retry of a non-idempotent create or return depends on):
 *
 * - `unreached`: no connection, or the TLS handshake failed (a refused client certificate): no byte
 *   of the request left, Kaspi cannot have acted on it;
 * - `lost`: connected, and no complete answer came: Kaspi may have acted on it;
 * - `answer`: a complete HTTP answer.
 *
 * The strong scheme presents the operator's client certificate (mTLS); the easy scheme sends the
 * Api-Key. Each call opens its own connection: a kept-alive socket Kaspi closed meanwhile would
 * turn a request that never arrived into an ambiguous one. Messages never carry the key, the
 * certificate or a device token.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

export type KaspiCall =
  | { kind: 'answer'; status: number; body: unknown; retryAfter: string | null }
  | { kind: 'unreached'; message: string }
  | { kind: 'lost'; message: string };

export interface KaspiAccess {
  baseUrl: string;
  /** Strong scheme: PEM texts of the client certificate, its key and the CA Kaspi's server certificate is checked against. */
  tls?: { cert: string | Buffer; key: string | Buffer; ca?: string | Buffer };
  /** Easy scheme. */
  apiKey?: string;
  timeoutMs: number;
}

const MAX_ANSWER_BYTES = 256 * 1024;

export function callKaspi(access: KaspiAccess, req: { method: 'GET' | 'POST'; path: string; json?: unknown }): Promise<KaspiCall> {
  return new Promise((resolve) => {
    const url = new URL(access.baseUrl.replace(/\/+$/, '') + req.path);
    const body = req.json === undefined ? undefined : Buffer.from(JSON.stringify(req.json), 'utf8');
    const headers: Record<string, string> = { accept: 'application/json' };
    if (access.apiKey) headers['api-key'] = access.apiKey;
    if (body) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(body.length);
    }
    const what = `Kaspi ${req.method} ${url.pathname}`;
    const secure = url.protocol === 'https:';
    let connected = false;
    let settled = false;
    let client: ClientRequest;
    const finish = (result: KaspiCall) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const failed = (reason: string) =>
      finish(
        connected
          ? { kind: 'lost', message: `${what}: sent, and no complete answer came (${reason})` }
          : { kind: 'unreached', message: `${what}: Kaspi was not reached (${reason})` },
      );
    const timer = setTimeout(() => {
      failed(`no answer within ${access.timeoutMs} ms`);
      client.destroy();
    }, access.timeoutMs);
    try {
      const options = { method: req.method, headers, agent: false as const, ...(secure && access.tls ? access.tls : {}) };
      client = secure ? httpsRequest(url, options) : httpRequest(url, options);
    } catch (err) {
      clearTimeout(timer);
      resolve({ kind: 'unreached', message: `${what}: the request could not be made (${describe(err)})` });
      return;
    }
    client.on('socket', (socket) => {
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        connected = true;
      });
    });
    client.on('error', (err) => {
      // TLS 1.3 completes the client's side of the handshake before the server has checked the
      // client certificate; its refusal then arrives as an alert. A server that refused the
      // certificate never read the request: nothing was sent, whatever `connected` says.
      if (/^ERR_SSL_.*ALERT/.test(describe(err))) connected = false;
      failed(describe(err));
    });
    client.on('response', (response: IncomingMessage) => {
      // An answer means the handshake held (a server that refuses the certificate may still answer first).
      connected = true;
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
        let parsed: unknown;
        try {
          parsed = text.trim() === '' ? null : JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        const retryAfter = response.headers['retry-after'];
        finish({
          kind: 'answer',
          status: response.statusCode ?? 0,
          body: parsed,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
        });
      });
    });
    client.end(body);
  });
}

function describe(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return err instanceof Error ? err.message : String(err);
}
