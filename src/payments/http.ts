/**
 * The HTTP client every real provider adapter talks through. It owns the retry matrix of
 * docs/providers.md ("Retries") so that no adapter can get it slightly wrong:
 *
 *   network error / timeout → retry, same key and body      429 → wait Retry-After, retry
 *   5xx → backoff 1 s, 2 s, 4 s … with jitter, capped         202 → no new call (`processing`)
 *   409 idempotency_conflict → never retried (`conflict`)     other 4xx → never retried
 *
 * Which calls are retried is the caller's choice (`retry`): creates carry an Idempotency-Key and
 * retry until their deadline; reads get a few quick retries (the poller tries again anyway);
 * money-moving calls without a safe replay (refunds) get exactly one attempt.
 */
import type { Clock } from '../util/clock.js';
import { sleep as realSleep } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { z } from 'zod';
import { ProviderError, type ProviderCallOutcome, type ProviderErrorKind } from './types.js';
import { httpFetch, type AnswerHeaders, type FetchInit, type FetchLike } from '../util/http-fetch.js';

export type RetryPolicy = 'create' | 'read' | 'none';

export interface HttpClientDeps {
  clock: Clock;
  /** Bound to the provider by the adapter (`provider` is on every line already). */
  logger: Logger;
  /** Defaults to util/http-fetch.ts (node:http and node:https, kept-alive connections); tests give their own. */
  fetch?: FetchLike;
  /** Defaults to a real timer; tests pass one that advances a manual clock. */
  sleep?: (ms: number) => Promise<void>;
  /** 0..1, for the backoff jitter. */
  random?: () => number;
  /** Told the duration of every attempt (metrics) and the provider's Date (clock skew); never affects the call. */
  observeRequest?: (sample: RequestSample) => void;
  /**
   * Told the outcome of every call once its attempts are over: answered, or the error the caller
   * gets. Provider health subscribes here (orders/ ProviderHealth.heard), so every call to the
   * provider, whoever makes it, says whether the provider answers. Never affects the call.
   */
  onCall?: (outcome: ProviderCallOutcome) => void;
}

/** One attempt, as observeRequest hears it. */
export interface RequestSample {
  method: string;
  outcome: 'ok' | 'error';
  seconds: number;
  /** The provider's `Date` header (epoch ms) on an attempt that got an HTTP answer with one. */
  serverDate?: number;
  /** This device's clock when that answer came (epoch ms). */
  receivedAt?: number;
}

export interface HttpClientOptions {
  /** Provider name, used in messages and logs. */
  provider: string;
  baseUrl: string;
  /** Timeout of one attempt. */
  requestTimeoutMs: number;
  /** Upper bound on all attempts of one `create` call. */
  createDeadlineMs: number;
}

export interface HttpRequest {
  /** DELETE: QPay cancels and refunds with it. */
  method: 'GET' | 'POST' | 'DELETE';
  /** Joined to the base URL; ids inside it must already be encoded. */
  path: string;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Serialised once, so every retry sends the same bytes. */
  json?: unknown;
  form?: Record<string, string>;
  retry: RetryPolicy;
  /** Clock ms after which no new attempt starts. Defaults: now + createDeadlineMs for `create`. */
  deadlineAt?: number;
  /** Non-2xx statuses the caller wants back as a response instead of an error (e.g. 404 on a probe). */
  okStatuses?: readonly number[];
}

export interface HttpResponse {
  status: number;
  /** Parsed JSON; null for an empty body. */
  body: unknown;
  headers: AnswerHeaders;
  attempts: number;
}

export interface ProviderHttpClient {
  request(request: HttpRequest): Promise<HttpResponse>;
}

/** Named so tests and docs/providers.md can cite them. */
export const RETRY_DEFAULTS = {
  backoffBaseMs: 1_000,
  backoffCapMs: 8_000,
  /** ±20 % of the delay, so a fleet that lost the network together does not retry in lockstep. */
  jitter: 0.2,
  /** Reads: one attempt plus this many quick retries. */
  readRetries: 2,
  readBackoffBaseMs: 250,
  readBackoffCapMs: 1_000,
  /** A 429 on a read waits at most this long; longer → the error goes back to the poller. */
  readMaxRetryAfterMs: 1_000,
  /** No attempt is started with less time than this before the deadline. */
  minAttemptMs: 100,
  /** A `Retry-After: 0` must not turn into a tight loop against a provider that is shedding load. */
  minRetryAfterMs: 250,
  /** A second bound beside the deadline, should a clock ever stand still. */
  createMaxAttempts: 30,
} as const;

type Attempt = { ok: true; response: HttpResponse } | { ok: false; error: ProviderError; retryable: boolean; retryAfterMs?: number };

export function createProviderHttpClient(deps: HttpClientDeps, options: HttpClientOptions): ProviderHttpClient {
  const doFetch = deps.fetch ?? httpFetch;
  const sleep = deps.sleep ?? ((ms: number) => realSleep(ms));
  const random = deps.random ?? Math.random;
  const log = deps.logger;
  const baseUrl = options.baseUrl.replace(/\/+$/, '');

  async function request(req: HttpRequest): Promise<HttpResponse> {
    try {
      const response = await attempts(req);
      tell({ ok: true });
      return response;
    } catch (err) {
      tell({ ok: false, error: err });
      throw err;
    }
  }

  function tell(outcome: ProviderCallOutcome): void {
    try {
      deps.onCall?.(outcome);
    } catch (err) {
      log.warn({ err }, 'observing a provider call failed');
    }
  }

  async function attempts(req: HttpRequest): Promise<HttpResponse> {
    const url = buildUrl(baseUrl, req.path, req.query);
    const init = buildInit(req);
    const deadlineAt = req.deadlineAt ?? (req.retry === 'create' ? deps.clock.now() + options.createDeadlineMs : Infinity);
    const maxAttempts =
      req.retry === 'create' ? RETRY_DEFAULTS.createMaxAttempts : req.retry === 'read' ? 1 + RETRY_DEFAULTS.readRetries : 1;

    for (let attempt = 1; ; attempt += 1) {
      const remaining = deadlineAt - deps.clock.now();
      const timeoutMs = Math.max(RETRY_DEFAULTS.minAttemptMs, Math.min(options.requestTimeoutMs, remaining));
      const result = await attemptOnce(url, init, req, timeoutMs, attempt);
      if (result.ok) return result.response;

      const { error } = result;
      if (!result.retryable || attempt >= maxAttempts) throw error;
      const delayMs = retryDelay(req.retry, attempt, result.retryAfterMs);
      if (delayMs === undefined || deps.clock.now() + delayMs + RETRY_DEFAULTS.minAttemptMs > deadlineAt) {
        throw new ProviderError(error.kind, `${error.message} (gave up after ${attempt} attempt${attempt === 1 ? '' : 's'})`, {
          providerCode: error.providerCode,
          httpStatus: error.httpStatus,
          retryAfterMs: error.retryAfterMs,
          cause: error.cause,
        });
      }
      log.warn(
        { method: req.method, path: req.path, attempt, kind: error.kind, httpStatus: error.httpStatus, delayMs },
        'provider call failed, retrying',
      );
      await sleep(delayMs);
    }
  }

  async function attemptOnce(url: string, init: FetchInit, req: HttpRequest, timeoutMs: number, attempt: number): Promise<Attempt> {
    const started = performance.now();
    const dated: { serverDate?: number; receivedAt?: number } = {};
    const result = await attemptUntimed(url, init, req, timeoutMs, attempt, dated);
    try {
      deps.observeRequest?.({
        method: req.method,
        outcome: result.ok ? 'ok' : 'error',
        seconds: (performance.now() - started) / 1000,
        ...dated,
      });
    } catch (err) {
      log.warn({ err }, 'observing a provider call failed');
    }
    return result;
  }

  async function attemptUntimed(
    url: string,
    init: FetchInit,
    req: HttpRequest,
    timeoutMs: number,
    attempt: number,
    dated: { serverDate?: number; receivedAt?: number },
  ): Promise<Attempt> {
    const what = `${options.provider} ${req.method} ${req.path}`;
    let status: number;
    let headers: AnswerHeaders;
    let text: string;
    try {
      const response = await doFetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
      status = response.status;
      headers = response.headers;
      // Every answer's Date header, not only verified webhooks': the clock skew is known even when
      // no webhook signature holds any more (then only API answers can measure it).
      const date = Date.parse(headers.get('date') ?? '');
      if (!Number.isNaN(date)) Object.assign(dated, { serverDate: date, receivedAt: deps.clock.now() });
      // The body is read under the same timeout: a response that stalls halfway is a timeout too.
      text = await response.text();
    } catch (err) {
      const timedOut = isTimeout(err);
      const kind: ProviderErrorKind = timedOut ? 'timeout' : 'network';
      const message = timedOut ? `${what}: no answer within ${timeoutMs} ms` : `${what}: network error (${describeNetworkError(err)})`;
      return { ok: false, error: new ProviderError(kind, message, { cause: err }), retryable: true };
    }

    if ((status >= 200 && status < 300 && status !== 202) || req.okStatuses?.includes(status)) {
      const parsed = parseJson(text);
      if (!parsed.ok) {
        return {
          ok: false,
          retryable: false,
          error: new ProviderError('malformed', `${what}: HTTP ${status} with a body that is not JSON (${describeBody(text, headers)})`, {
            httpStatus: status,
          }),
        };
      }
      return { ok: true, response: { status, body: parsed.value, headers, attempts: attempt } };
    }

    const errorBody = parseJson(text);
    const { code, message } = readProviderError(errorBody.ok ? errorBody.value : undefined);
    const detail = `${what}: HTTP ${status}${code ? ` ${code}` : ''}${message ? ` — ${message}` : ''}`;
    const base = { providerCode: code, httpStatus: status };
    if (status === 202)
      return {
        ok: false,
        retryable: false,
        error: new ProviderError('processing', `${detail} (still processing: read it with GET)`, base),
      };
    if (status === 429) {
      const retryAfterMs = parseRetryAfter(headers.get('retry-after'), deps.clock.now());
      return { ok: false, retryable: true, retryAfterMs, error: new ProviderError('rate_limited', detail, { ...base, retryAfterMs }) };
    }
    if (status >= 500) return { ok: false, retryable: true, error: new ProviderError('server', detail, base) };
    if (status === 409 && (code === undefined || code === 'idempotency_conflict')) {
      return {
        ok: false,
        retryable: false,
        error: new ProviderError(
          'conflict',
          `${detail} (the same Idempotency-Key was sent with a different body: a programming error)`,
          base,
        ),
      };
    }
    if (status === 401 || status === 403)
      return { ok: false, retryable: false, error: new ProviderError('auth', `${detail} (check the credentials)`, base) };
    if (status === 404) return { ok: false, retryable: false, error: new ProviderError('not_found', detail, base) };
    if (status >= 400) return { ok: false, retryable: false, error: new ProviderError('rejected', detail, base) };
    if (status >= 300 && status < 400) {
      // Redirects are not followed: a POST replayed to another host is not what the key promised.
      return {
        ok: false,
        retryable: false,
        error: new ProviderError(
          'rejected',
          `${detail} redirected to ${headers.get('location') ?? '(no location)'}: check provider.baseUrl`,
          base,
        ),
      };
    }
    return { ok: false, retryable: false, error: new ProviderError('malformed', `${detail} (unexpected status)`, base) };
  }

  function retryDelay(policy: RetryPolicy, attempt: number, retryAfterMs: number | undefined): number | undefined {
    const wait = retryAfterMs === undefined ? undefined : Math.max(retryAfterMs, RETRY_DEFAULTS.minRetryAfterMs);
    if (policy === 'read') {
      if (wait !== undefined) return wait <= RETRY_DEFAULTS.readMaxRetryAfterMs ? wait : undefined;
      return backoff(attempt, RETRY_DEFAULTS.readBackoffBaseMs, RETRY_DEFAULTS.readBackoffCapMs, random);
    }
    if (wait !== undefined) return wait;
    return backoff(attempt, RETRY_DEFAULTS.backoffBaseMs, RETRY_DEFAULTS.backoffCapMs, random);
  }

  return { request };
}

/** base·2^(attempt−1), ±jitter, never above the cap. attempt 1 → ~1 s, 2 → ~2 s, 3 → ~4 s, … */
export function backoff(attempt: number, baseMs: number, capMs: number, random: () => number): number {
  const plain = Math.min(capMs, baseMs * 2 ** Math.min(attempt - 1, 30));
  const factor = 1 - RETRY_DEFAULTS.jitter + 2 * RETRY_DEFAULTS.jitter * clamp01(random());
  return Math.round(Math.min(capMs, plain * factor));
}

/** Retry-After in seconds (what the providers send) or as an HTTP date. Undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1_000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** A 2xx body checked against its wire schema, or ProviderError('malformed') naming the wrong fields. */
export function parseWire<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const fields = result.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`).join('; ');
  throw new ProviderError('malformed', `${what}: unexpected response (${fields})`);
}

/** Gerege: `{ error: { code, message } }`; QutPay: `{ error: "code", message }`. */
export function readProviderError(body: unknown): { code?: string; message?: string } {
  if (!isRecord(body)) return {};
  const error = body.error;
  if (typeof error === 'string') return { code: error, message: typeof body.message === 'string' ? body.message : undefined };
  if (isRecord(error)) {
    return {
      code: typeof error.code === 'string' ? error.code : undefined,
      message: typeof error.message === 'string' ? error.message : undefined,
    };
  }
  return {};
}

/** A header by case-insensitive name; repeated headers are joined with commas. */
export function readHeader(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    return Array.isArray(value) ? value.join(',') : value;
  }
  return undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function buildUrl(baseUrl: string, path: string, query: HttpRequest['query']): string {
  const url = new URL(baseUrl + path);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return url.toString();
}

function buildInit(req: HttpRequest): FetchInit {
  const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
  let body: string | undefined;
  if (req.json !== undefined) {
    body = JSON.stringify(req.json);
    headers['content-type'] = 'application/json';
  } else if (req.form !== undefined) {
    body = new URLSearchParams(req.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  return { method: req.method, headers, body, redirect: 'manual' };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text.trim() === '') return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
}

function describeNetworkError(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

function describeBody(text: string, headers: AnswerHeaders): string {
  const type = headers.get('content-type') ?? 'no content-type';
  return `${type}, ${text.length} bytes, starts ${JSON.stringify(text.slice(0, 40))}`;
}

function clamp01(value: number): number {
  return Number.isFinite(value) ? Math.min(1, Math.max(0, value)) : 0.5;
}
