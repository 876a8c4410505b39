import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock, silentLogger } from '../../src/util/index.js';
import { ProviderError, type ProviderCallOutcome } from '../../src/payments/types.js';
import {
  backoff,
  createProviderHttpClient,
  parseRetryAfter,
  RETRY_DEFAULTS,
  type HttpRequest,
  type RetryPolicy,
} from '../../src/payments/http.js';
import { recordingSleep, startFakeProviderServer, type FakeProviderServer, type Handler, type Reply } from './fake-provider-server.js';

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const OK: Reply = { status: 201, json: { id: 'pi_1' } };

async function setup(handler: Handler, options: { createDeadlineMs?: number; requestTimeoutMs?: number; random?: () => number } = {}) {
  server = await startFakeProviderServer(handler);
  const clock = createManualClock();
  const { sleep, delays } = recordingSleep(clock);
  const calls: ProviderCallOutcome[] = [];
  const client = createProviderHttpClient(
    { clock, logger: silentLogger(), sleep, random: options.random ?? (() => 0.5), onCall: (outcome) => calls.push(outcome) },
    {
      provider: 'test',
      baseUrl: server.url,
      requestTimeoutMs: options.requestTimeoutMs ?? 2_000,
      createDeadlineMs: options.createDeadlineMs ?? 20_000,
    },
  );
  return { client, clock, delays, requests: server.requests, calls };
}

/** Replies from a script, one per request; the last entry repeats. */
function script(...replies: Reply[]): Handler {
  return (_request, index) => replies[Math.min(index, replies.length - 1)]!;
}

const create = (overrides: Partial<HttpRequest> = {}): HttpRequest => ({
  method: 'POST',
  path: '/payment-intents',
  headers: { 'idempotency-key': 'vm-1-db-7-pay' },
  json: { amount: 1500, currency: 'MNT', reference: 'vm-1-7' },
  retry: 'create',
  ...overrides,
});

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

describe('retry matrix: creates with an Idempotency-Key', () => {
  it('a dropped connection is retried with the same key and the same bytes', async () => {
    const { client, requests } = await setup(script({ drop: true }, { drop: true }, OK));
    const response = await client.request(create());
    expect(response.status).toBe(201);
    expect(response.attempts).toBe(3);
    expect(requests).toHaveLength(3);
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
    expect(new Set(requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('a call that gets no answer times out and is retried with the same key', async () => {
    const { client, requests } = await setup(script({ hang: true }, OK), { requestTimeoutMs: 150 });
    const response = await client.request(create());
    expect(response.status).toBe(201);
    // At least one retry; a loaded machine may need more than 150 ms for the good answer too.
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(new Set(requests.map((r) => `${r.headers['idempotency-key']}|${r.body}`)).size).toBe(1);
  });

  it('a body cut short mid-transfer counts as a network error and is retried', async () => {
    const { client, requests } = await setup(script({ status: 201, partial: '{"id":"pi_' }, OK));
    await expect(client.request(create())).resolves.toMatchObject({ status: 201, body: { id: 'pi_1' } });
    expect(requests).toHaveLength(2);
  });

  it('429 waits exactly Retry-After seconds before the retry', async () => {
    const { client, delays, requests } = await setup(
      script({ status: 429, headers: { 'retry-after': '3' }, json: { error: { code: 'rate_limited' } } }, OK),
    );
    await client.request(create());
    expect(delays).toEqual([3_000]);
    expect(requests).toHaveLength(2);
  });

  it('429 with Retry-After: 0 still waits a moment instead of hammering', async () => {
    const { client, delays } = await setup(script({ status: 429, headers: { 'retry-after': '0' }, json: {} }, OK));
    await client.request(create());
    expect(delays).toEqual([RETRY_DEFAULTS.minRetryAfterMs]);
  });

  it('a create stops after a bounded number of attempts even if the clock stands still', async () => {
    server = await startFakeProviderServer(script({ status: 429, headers: { 'retry-after': '0' }, json: {} }));
    const client = createProviderHttpClient(
      { clock: createManualClock(), logger: silentLogger(), sleep: async () => {}, random: () => 0.5 },
      { provider: 'test', baseUrl: server.url, requestTimeoutMs: 2_000, createDeadlineMs: 20_000 },
    );
    await expect(client.request(create())).rejects.toMatchObject({ kind: 'rate_limited' });
    expect(server.requests).toHaveLength(RETRY_DEFAULTS.createMaxAttempts);
  });

  it('429 without Retry-After falls back to the backoff schedule', async () => {
    const { client, delays } = await setup(script({ status: 429, json: {} }, OK));
    await client.request(create());
    expect(delays).toEqual([1_000]);
  });

  it('5xx backs off 1 s, 2 s, 4 s, then stays at the 8 s cap', async () => {
    const { client, delays, requests } = await setup(
      script(
        { status: 500, json: {} },
        { status: 502, text: '<html>Bad gateway</html>' },
        { status: 503, json: {} },
        { status: 504, json: {} },
        { status: 500, json: {} },
        OK,
      ),
      { createDeadlineMs: 60_000 },
    );
    await client.request(create());
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
    expect(requests).toHaveLength(6);
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
  });

  it('202 processing makes no new call and says to read with GET', async () => {
    const { client, requests } = await setup(script({ status: 202, json: { id: 'pi_1', status: 'processing' } }));
    const err = await failure(client.request(create()));
    expect(err.kind).toBe('processing');
    expect(err.transient).toBe(true);
    expect(requests).toHaveLength(1);
  });

  it('409 idempotency_conflict is never retried and is reported as a conflict', async () => {
    const { client, requests } = await setup(
      script({ status: 409, json: { error: { code: 'idempotency_conflict', message: 'key reused' } } }),
    );
    const err = await failure(client.request(create()));
    expect(err).toMatchObject({ kind: 'conflict', providerCode: 'idempotency_conflict', httpStatus: 409 });
    expect(err.transient).toBe(false);
    expect(requests).toHaveLength(1);
  });

  it.each([
    [400, { error: { code: 'invalid_request', message: 'amount' } }, 'rejected', 'invalid_request'],
    [422, { error: 'amount_too_small', message: 'min 100' }, 'rejected', 'amount_too_small'],
    [409, { error: { code: 'invoice_closed' } }, 'rejected', 'invoice_closed'],
    [404, { error: { code: 'not_found' } }, 'not_found', 'not_found'],
    [401, { error: 'unauthorized' }, 'auth', 'unauthorized'],
    [403, { error: { code: 'forbidden' } }, 'auth', 'forbidden'],
  ] as const)('HTTP %i is not retried and carries the provider code (%s)', async (status, json, kind, code) => {
    const { client, requests } = await setup(script({ status, json }));
    const err = await failure(client.request(create()));
    expect(err).toMatchObject({ kind, providerCode: code, httpStatus: status });
    expect(requests).toHaveLength(1);
  });

  it('a redirect is not followed: the base URL is wrong', async () => {
    const { client, requests } = await setup(script({ status: 301, headers: { location: 'https://elsewhere/' }, json: {} }));
    const err = await failure(client.request(create()));
    expect(err.kind).toBe('rejected');
    expect(err.message).toContain('provider.baseUrl');
    expect(requests).toHaveLength(1);
  });

  it('endless 5xx gives up within createDeadlineMs', async () => {
    const { client, clock, delays, requests } = await setup(script({ status: 503, json: {} }), { createDeadlineMs: 20_000 });
    const started = clock.now();
    const err = await failure(client.request(create()));
    expect(err.kind).toBe('server');
    expect(err.message).toMatch(/gave up after \d+ attempts/);
    expect(clock.now() - started).toBeLessThanOrEqual(20_000);
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(requests).toHaveLength(5);
  });

  it('a Retry-After longer than the time left gives up at once with the wait attached', async () => {
    const { client, delays, requests } = await setup(script({ status: 429, headers: { 'retry-after': '60' }, json: {} }));
    const err = await failure(client.request(create()));
    expect(err).toMatchObject({ kind: 'rate_limited', retryAfterMs: 60_000 });
    expect(delays).toEqual([]);
    expect(requests).toHaveLength(1);
  });
});

describe('retry matrix: reads and single-shot calls', () => {
  it('a read gets one attempt plus two quick retries', async () => {
    const { client, delays, requests } = await setup(script({ status: 500, json: {} }));
    const err = await failure(client.request({ method: 'GET', path: '/payment-intents/pi_1', retry: 'read' }));
    expect(err.kind).toBe('server');
    expect(requests).toHaveLength(1 + RETRY_DEFAULTS.readRetries);
    expect(delays.every((ms) => ms <= RETRY_DEFAULTS.readBackoffCapMs)).toBe(true);
  });

  it('a read told to wait long by 429 hands the wait back to the caller instead of sleeping', async () => {
    const { client, delays, requests } = await setup(script({ status: 429, headers: { 'retry-after': '30' }, json: {} }));
    const err = await failure(client.request({ method: 'GET', path: '/payment-intents/pi_1', retry: 'read' }));
    expect(err).toMatchObject({ kind: 'rate_limited', retryAfterMs: 30_000 });
    expect(delays).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it.each<[string, Reply, string]>([
    ['a dropped connection', { drop: true }, 'network'],
    ['a 5xx', { status: 500, json: {} }, 'server'],
    ['a 429', { status: 429, headers: { 'retry-after': '1' }, json: {} }, 'rate_limited'],
  ])('a call without a safe replay makes exactly one attempt after %s', async (_what, reply, kind) => {
    const { client, requests } = await setup(script(reply));
    const err = await failure(
      client.request({ method: 'POST', path: '/payment-intents/pi_1/refunds', json: { amount: 1 }, retry: 'none' }),
    );
    expect(err.kind).toBe(kind);
    expect(requests).toHaveLength(1);
  });

  it('a single-shot call that gets no answer fails as a timeout', async () => {
    const { client, requests } = await setup(script({ hang: true }), { requestTimeoutMs: 150 });
    const err = await failure(client.request({ method: 'POST', path: '/x', json: {}, retry: 'none' }));
    expect(err.kind).toBe('timeout');
    expect(requests).toHaveLength(1);
  });
});

describe('malformed answers are typed errors, never crashes', () => {
  it.each<[string, Reply]>([
    ['an HTML page', { status: 200, text: '<!doctype html><html><body>Welcome to nginx</body></html>' }],
    ['truncated JSON', { status: 200, headers: { 'content-type': 'application/json' }, text: '{"id":"pi_1","status":"succ' }],
  ])('%s with HTTP 200 is malformed and not retried', async (_what, reply) => {
    const { client, requests } = await setup(script(reply));
    const err = await failure(client.request(create()));
    expect(err.kind).toBe('malformed');
    expect(err.httpStatus).toBe(200);
    expect(requests).toHaveLength(1);
  });

  it('an HTML error page on a 4xx is classified by its status, without a provider code', async () => {
    const { client } = await setup(script({ status: 400, text: '<html>400 Bad Request</html>' }));
    const err = await failure(client.request(create()));
    expect(err).toMatchObject({ kind: 'rejected', httpStatus: 400, providerCode: undefined });
  });

  it('an empty 2xx body reads as null', async () => {
    const { client } = await setup(script({ status: 200, text: '' }));
    await expect(client.request(create())).resolves.toMatchObject({ body: null });
  });
});

describe('each call told once to onCall (provider health subscribes)', () => {
  it('a call that succeeds after retries is told once, as answered', async () => {
    const { client, calls, requests } = await setup(script({ status: 503, json: {} }, { status: 503, json: {} }, OK));
    await client.request(create());
    expect(requests).toHaveLength(3);
    expect(calls).toEqual([{ ok: true }]);
  });

  it('a call that gives up is told once, with the error its caller gets', async () => {
    const { client, calls } = await setup(script({ status: 503, json: {} }));
    const err = await failure(client.request({ method: 'GET', path: '/payment-intents/pi_1', retry: 'read' }));
    expect(calls).toEqual([{ ok: false, error: err }]);
    expect(err.transient).toBe(true);
  });

  it('a status the caller asked for (404 on a probe) is an answer', async () => {
    const { client, calls } = await setup(script({ status: 404, json: {} }));
    await client.request({ method: 'GET', path: '/probe', retry: 'read', okStatuses: [404] });
    expect(calls).toEqual([{ ok: true }]);
  });
});

describe('backoff and Retry-After', () => {
  it('jitter stays within ±20 % and never exceeds the cap', () => {
    expect(backoff(1, 1_000, 8_000, () => 0)).toBe(800);
    expect(backoff(1, 1_000, 8_000, () => 1)).toBe(1_200);
    expect(backoff(3, 1_000, 8_000, () => 0.5)).toBe(4_000);
    for (let attempt = 1; attempt < 60; attempt += 1) expect(backoff(attempt, 1_000, 8_000, () => 1)).toBeLessThanOrEqual(8_000);
  });

  it('Retry-After is read as seconds or as an HTTP date', () => {
    const now = Date.UTC(2026, 10, 29, 12, 0, 0);
    expect(parseRetryAfter('5', now)).toBe(5_000);
    expect(parseRetryAfter(new Date(now + 7_000).toUTCString(), now)).toBe(7_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it.each<RetryPolicy>(['create', 'read', 'none'])('policy %s sends one request when the first answer is good', async (retry) => {
    const { client, requests } = await setup(script({ status: 200, json: { ok: true } }));
    await client.request({ method: 'POST', path: '/x', json: {}, retry });
    expect(requests).toHaveLength(1);
  });
});
