/**
 * One HTTP call to a fiscal register, told apart by whether the request reached it: the question a
 * receipt's retry depends on (`unreached`: the register cannot have acted on it; `lost`: it may
 * have; `answer`: a complete HTTP answer, the caller reads the register's words). The call itself,
 * and why node:http without keep-alive, is util/http-call.ts. Receipts are one per vend, so the
 * extra handshake of a connection per call costs nothing that matters. Messages name the `what`
 * given (register, method, path), never the URL: a PosAPI address is a secret place.
 */
import { callOnce } from '../util/http-call.js';

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

export async function callRegister(req: RegisterCallRequest): Promise<RegisterCall> {
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return { kind: 'unreached', message: `${req.what}: the register URL is not a valid URL` };
  }
  const call = await callOnce(url, {
    method: req.method,
    ...(req.headers ? { headers: req.headers } : {}),
    json: req.json,
    timeoutMs: req.timeoutMs,
    maxAnswerBytes: MAX_ANSWER_BYTES,
    what: req.what,
    unreached: (reason) => `${req.what}: the register was not reached (${reason})`,
    lost: (reason) => `${req.what}: the request was sent and no complete answer came (${reason})`,
  });
  return call.kind === 'answer' ? { kind: 'answer', status: call.status, body: call.body, text: call.text } : call;
}

/** What an answer's body looked like, for a message: never the body itself (it may carry QR data). */
export function describeAnswer(call: { status: number; text: string }): string {
  return `HTTP ${call.status}, ${call.text.length} bytes`;
}
