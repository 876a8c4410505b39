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
 * Api-Key. The call itself, a connection of its own each time, is util/http-call.ts, as a fiscal
 * register's is. Messages never carry the key, the certificate or a device token.
 */
import { callOnce } from '../util/http-call.js';

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

export async function callKaspi(access: KaspiAccess, req: { method: 'GET' | 'POST'; path: string; json?: unknown }): Promise<KaspiCall> {
  const url = new URL(access.baseUrl.replace(/\/+$/, '') + req.path);
  const what = `Kaspi ${req.method} ${url.pathname}`;
  const call = await callOnce(url, {
    method: req.method,
    headers: access.apiKey ? { 'api-key': access.apiKey } : {},
    json: req.json,
    timeoutMs: access.timeoutMs,
    maxAnswerBytes: MAX_ANSWER_BYTES,
    ...(access.tls ? { tls: access.tls } : {}),
    // A refused client certificate (TLS 1.3 alert): Kaspi never read the request.
    certificateMayBeRefused: true,
    what,
    unreached: (reason) => `${what}: Kaspi was not reached (${reason})`,
    lost: (reason) => `${what}: sent, and no complete answer came (${reason})`,
  });
  if (call.kind !== 'answer') return call;
  const retryAfter = call.headers['retry-after'];
  return { kind: 'answer', status: call.status, body: call.body, retryAfter: typeof retryAfter === 'string' ? retryAfter : null };
}
