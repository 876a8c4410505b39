import { describe, expect, it } from 'vitest';
import type { createManualClock } from '../../src/util/index.js';
import { cleanup, stop } from '../helpers/cleanup.js';
import { ProviderError, type PaymentProvider } from '../../src/payments/types.js';
import { createGeregeProvider, GEREGE_STATUS_MAP } from '../../src/payments/gerege/index.js';
import {
  adapterDeps,
  invoiceRequest,
  startFakeProviderServer,
  type FakeProviderServer,
  type RecordedRequest,
  type Reply,
} from './fake-provider-server.js';

const CLIENT_ID = 'vm-client';
const CLIENT_SECRET = 'cs_super_secret_value';
const request = invoiceRequest(1500, 'MNT', 'Cola 0.5 l');

function intent(overrides: Record<string, unknown> = {}) {
  return {
    id: 'pi_42',
    object: 'payment_intent',
    status: 'requires_payment',
    amount: 1500,
    currency: 'MNT',
    reference: 'vm-1-7',
    livemode: false,
    pay_url: 'https://pay.gerege.test/pi_42',
    expires_at: 1_764_417_720,
    created: 1_764_417_600,
    ...overrides,
  };
}

interface Fake {
  server: FakeProviderServer;
  provider: PaymentProvider;
  clock: ReturnType<typeof createManualClock>;
  logs: string[];
  tokenCalls: () => RecordedRequest[];
  apiCalls: () => RecordedRequest[];
}

const defer = cleanup();
/** The double of the running test, for handlers that look at what it received so far. */
let fake: Fake | undefined;

/** A Gerege double: issues tok_1, tok_2, … (expires_in as given) and hands API calls to `api`. */
async function setup(
  api: (req: RecordedRequest, token: string | undefined) => Reply,
  options: { expiresInSec?: number; tokenReply?: Reply } = {},
): Promise<Fake> {
  let issued = 0;
  const server = defer(
    await startFakeProviderServer((req) => {
      if (req.path === '/oauth2/token') {
        if (options.tokenReply) return options.tokenReply;
        issued += 1;
        return { status: 200, json: { access_token: `tok_${issued}`, token_type: 'Bearer', expires_in: options.expiresInSec ?? 3_600 } };
      }
      return api(req, req.headers.authorization?.replace(/^Bearer /, ''));
    }),
    stop,
  );
  const { clock, logs, deps } = adapterDeps();
  const provider = createGeregeProvider(deps, {
    baseUrl: server.url,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    requestTimeoutMs: 2_000,
    createDeadlineMs: 20_000,
  });
  fake = {
    server,
    provider,
    clock,
    logs,
    tokenCalls: () => server.requests.filter((r) => r.path === '/oauth2/token'),
    apiCalls: () => server.requests.filter((r) => r.path !== '/oauth2/token'),
  };
  return fake;
}

describe('Gerege tokens', () => {
  it('fetches a token with HTTP Basic and a client_credentials form, then reuses it', async () => {
    const { provider, tokenCalls, apiCalls } = await setup(() => ({ status: 200, json: intent() }));
    await provider.getInvoice('pi_42');
    await provider.getInvoice('pi_42');
    expect(tokenCalls()).toHaveLength(1);
    const [token] = tokenCalls();
    expect(token!.method).toBe('POST');
    expect(token!.headers.authorization).toBe(`Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`);
    expect(token!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(token!.body).toBe('grant_type=client_credentials');
    expect(apiCalls().map((r) => r.headers.authorization)).toEqual(['Bearer tok_1', 'Bearer tok_1']);
  });

  it('refreshes the token 60 s before it expires', async () => {
    const { provider, clock, apiCalls } = await setup(() => ({ status: 200, json: intent() }));
    await provider.getInvoice('pi_42');
    clock.advance(3_600_000 - 60_001);
    await provider.getInvoice('pi_42');
    clock.advance(2);
    await provider.getInvoice('pi_42');
    expect(apiCalls().map((r) => r.headers.authorization)).toEqual(['Bearer tok_1', 'Bearer tok_1', 'Bearer tok_2']);
  });

  it('concurrent calls share one token request', async () => {
    const { provider, tokenCalls } = await setup(() => ({ status: 200, json: intent() }));
    await Promise.all([provider.getInvoice('pi_42'), provider.getInvoice('pi_42'), provider.getInvoice('pi_42')]);
    expect(tokenCalls()).toHaveLength(1);
  });

  it('a 401 refreshes the token once and repeats the call', async () => {
    const { provider, apiCalls } = await setup((_req, token) =>
      token === 'tok_1' ? { status: 401, json: { error: { code: 'token_expired' } } } : { status: 200, json: intent() },
    );
    await expect(provider.getInvoice('pi_42')).resolves.toMatchObject({ id: 'pi_42' });
    expect(apiCalls().map((r) => r.headers.authorization)).toEqual(['Bearer tok_1', 'Bearer tok_2']);
  });

  it('a second 401 is an auth error, not a loop', async () => {
    const { provider, tokenCalls, apiCalls } = await setup(() => ({ status: 401, json: { error: { code: 'unauthorized' } } }));
    const err = await provider.getInvoice('pi_42').catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'auth', httpStatus: 401 });
    expect(tokenCalls()).toHaveLength(2);
    expect(apiCalls()).toHaveLength(2);
  });

  it('refused client credentials are an auth error that says what to check', async () => {
    const { provider, apiCalls } = await setup(() => ({ status: 200, json: intent() }), {
      tokenReply: { status: 401, json: { error: { code: 'invalid_client' } } },
    });
    const err = (await provider.checkCredentials().catch((e: unknown) => e)) as ProviderError;
    expect(err).toMatchObject({ kind: 'auth', providerCode: 'invalid_client' });
    expect(err.message).toContain('VENDGATE_PROVIDER_CLIENT_SECRET');
    expect(apiCalls()).toHaveLength(0);
  });
});

describe('Gerege payment intents', () => {
  it('create sends exactly the wire-format body with the Idempotency-Key and a bearer token', async () => {
    const { provider, apiCalls } = await setup(() => ({ status: 201, json: intent() }));
    const invoice = await provider.createInvoice(request);
    const [call] = apiCalls();
    expect(call).toMatchObject({ method: 'POST', path: '/payment-intents' });
    expect(call!.headers['idempotency-key']).toBe('vm-1-db1-7-pay');
    expect(call!.headers['content-type']).toBe('application/json');
    expect(call!.body).toBe(
      '{"amount":1500,"currency":"MNT","reference":"vm-1-7","description":"Cola 0.5 l","capture_method":"automatic","expires_in":120}',
    );
    expect(invoice).toEqual({
      id: 'pi_42',
      status: 'pending',
      providerStatus: 'requires_payment',
      amount: 1500,
      currency: 'MNT',
      reference: 'vm-1-7',
      livemode: false,
      payUrl: 'https://pay.gerege.test/pi_42',
      expiresAt: 1_764_417_720_000,
      refundedAmount: 0,
      createdAt: 1_764_417_600_000,
    });
  });

  it('manual capture mode asks for capture_method manual', async () => {
    const { provider, apiCalls } = await setup(() => ({ status: 201, json: intent() }));
    await provider.createInvoice({ ...request, captureMode: 'manual' });
    expect(JSON.parse(apiCalls()[0]!.body)).toMatchObject({ capture_method: 'manual' });
  });

  it('a 200 answer to a create is a replay of the earlier intent', async () => {
    const { provider } = await setup(() => ({ status: 200, json: intent() }));
    await expect(provider.createInvoice(request)).resolves.toMatchObject({ id: 'pi_42', replayed: true });
  });

  it('a lost create response is retried with the same key and the replay is returned', async () => {
    const { provider, apiCalls } = await setup((_req) => (apiCallsSoFar() === 1 ? { drop: true } : { status: 200, json: intent() }));
    function apiCallsSoFar() {
      return fake!.apiCalls().length;
    }
    await expect(provider.createInvoice(request)).resolves.toMatchObject({ id: 'pi_42', replayed: true });
    expect(apiCalls().map((r) => r.headers['idempotency-key'])).toEqual(['vm-1-db1-7-pay', 'vm-1-db1-7-pay']);
  });

  it('an intent that differs from the request is returned faithfully and logged', async () => {
    const { provider, logs } = await setup(() => ({ status: 200, json: intent({ amount: 9_999 }) }));
    await expect(provider.createInvoice(request)).resolves.toMatchObject({ amount: 9_999 });
    expect(logs.join('')).toContain('created intent differs from the request');
  });

  it('bad input is refused before anything is sent', async () => {
    const { provider, server } = await setup(() => ({ status: 201, json: intent() }));
    for (const bad of [{ amount: 0 }, { amount: 1.5 }, { idempotencyKey: '' }, { idempotencyKey: 'k'.repeat(129) }, { reference: ' ' }]) {
      await expect(provider.createInvoice({ ...request, ...bad })).rejects.toMatchObject({ kind: 'rejected' });
    }
    expect(server.requests).toHaveLength(0);
  });

  it.each(Object.entries(GEREGE_STATUS_MAP))('intent status %s reads as %s', async (word, canonical) => {
    const { provider } = await setup(() => ({ status: 200, json: intent({ status: word }) }));
    await expect(provider.getInvoice('pi_42')).resolves.toMatchObject({ status: canonical, providerStatus: word });
  });

  it('an unknown status reads as pending and is logged once per word', async () => {
    const { provider, logs } = await setup(() => ({ status: 200, json: intent({ status: 'on_hold' }) }));
    await expect(provider.getInvoice('pi_42')).resolves.toMatchObject({ status: 'pending', providerStatus: 'on_hold' });
    await provider.getInvoice('pi_42');
    expect(logs.filter((line) => line.includes('unknown provider status'))).toHaveLength(1);
  });

  it('cancel and capture post to the intent and map the answer', async () => {
    const { provider, apiCalls } = await setup((req) => ({
      status: 200,
      json: intent({ status: req.path.endsWith('/capture') ? 'succeeded' : 'canceled' }),
    }));
    await expect(provider.cancelInvoice('pi_42')).resolves.toMatchObject({ status: 'canceled' });
    await expect(provider.captureInvoice('pi_42')).resolves.toMatchObject({ status: 'paid' });
    expect(apiCalls().map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /payment-intents/pi_42/cancel',
      'POST /payment-intents/pi_42/capture',
    ]);
  });

  it.each<[string, unknown]>([
    ['an intent without an id', { ...intent(), id: undefined }],
    ['an intent with a string amount', intent({ amount: '1500' })],
    ['an intent without expires_at', { ...intent(), expires_at: undefined }],
    ['an array', [intent()]],
  ])('%s is a malformed error naming the field', async (_what, json) => {
    const { provider } = await setup(() => ({ status: 200, json }));
    await expect(provider.getInvoice('pi_42')).rejects.toMatchObject({
      kind: 'malformed',
      message: expect.stringContaining('gerege get payment intent'),
    });
  });

  it('an unknown intent is not_found', async () => {
    const { provider } = await setup(() => ({ status: 404, json: { error: { code: 'not_found' } } }));
    await expect(provider.getInvoice('pi_nope')).rejects.toMatchObject({ kind: 'not_found', providerCode: 'not_found' });
  });
});

describe('Gerege refunds', () => {
  it.each(['succeeded', 'pending', 'failed'] as const)('a refund answered %s is reported as such', async (status) => {
    const { provider, apiCalls } = await setup(() => ({
      status: 201,
      json: { id: 're_1', object: 'refund', payment_intent: 'pi_42', amount: 1500, status },
    }));
    await expect(provider.refund({ invoiceId: 'pi_42', amount: 1500, idempotencyKey: 'vm-1-db1-7-refund' })).resolves.toEqual({
      status,
      refundId: 're_1',
    });
    const [call] = apiCalls();
    expect(call).toMatchObject({ method: 'POST', path: '/payment-intents/pi_42/refunds', body: '{"amount":1500}' });
    expect(call!.headers['idempotency-key']).toBe('vm-1-db1-7-refund');
  });

  it.each<[string, Reply]>([
    ['a dropped connection', { drop: true }],
    ['a 500', { status: 500, json: { error: { code: 'internal' } } }],
    ['a 503 HTML page', { status: 503, text: '<html>down</html>' }],
    ['an unreadable 2xx', { status: 200, text: '{"id":"re_' }],
  ])('%s is an unknown outcome, and the refund is not sent again', async (_what, reply) => {
    const { provider, apiCalls } = await setup(() => reply);
    await expect(provider.refund({ invoiceId: 'pi_42', amount: 1500, idempotencyKey: 'k' })).resolves.toMatchObject({ status: 'unknown' });
    expect(apiCalls()).toHaveLength(1);
  });

  it('a refund refused by the provider throws its code and is not retried', async () => {
    const { provider, apiCalls } = await setup(() => ({ status: 409, json: { error: { code: 'idempotency_conflict' } } }));
    await expect(provider.refund({ invoiceId: 'pi_42', amount: 1500, idempotencyKey: 'k' })).rejects.toMatchObject({ kind: 'conflict' });
    expect(apiCalls()).toHaveLength(1);
  });
});

describe('Gerege events and credentials', () => {
  it('lists events with the paging query and keeps each body for the inbox', async () => {
    const events = [
      {
        id: 'evt_1',
        object: 'event',
        type: 'payment_intent.succeeded',
        livemode: false,
        created: 1_764_417_650,
        data: { object: intent({ status: 'succeeded' }) },
      },
      {
        id: 'evt_2',
        object: 'event',
        type: 'payment_intent.claimed',
        livemode: false,
        created: 1_764_417_640,
        data: { object: intent({ status: 'claimed' }) },
      },
    ];
    const { provider, apiCalls } = await setup(() => ({ status: 200, json: { data: events, has_more: true } }));
    const page = await provider.listEvents!({ createdAfterSec: 1_764_417_000, startingAfter: 'evt_0' });
    const [call] = apiCalls();
    expect(call!.path).toBe('/events');
    expect(Object.fromEntries(call!.query)).toEqual({ created_after: '1764417000', limit: '100', starting_after: 'evt_0' });
    expect(page.hasMore).toBe(true);
    expect(page.events.map((e) => e.event)).toEqual([
      {
        eventId: 'evt_1',
        type: 'payment_intent.succeeded',
        objectId: 'pi_42',
        livemode: false,
        createdAt: 1_764_417_650_000,
        reference: 'vm-1-7',
      },
      {
        eventId: 'evt_2',
        type: 'payment_intent.claimed',
        objectId: 'pi_42',
        livemode: false,
        createdAt: 1_764_417_640_000,
        reference: 'vm-1-7',
      },
    ]);
    expect(JSON.parse(page.events[0]!.rawBody.toString())).toEqual(events[0]);
  });

  it('a page with an item that is not an event is malformed', async () => {
    const { provider } = await setup(() => ({ status: 200, json: { data: [{ type: 'x' }], has_more: false } }));
    await expect(provider.listEvents!({})).rejects.toMatchObject({ kind: 'malformed' });
  });

  it('checkCredentials proves the token with a read that creates nothing and reports the server date', async () => {
    const { provider, apiCalls } = await setup(() => ({ status: 404, json: { error: { code: 'not_found' } } }));
    const result = await provider.checkCredentials();
    expect(result.detail).toMatch(/token issued/);
    expect(result.serverDate).toEqual(expect.any(Number));
    expect(apiCalls().every((r) => r.method === 'GET')).toBe(true);
  });

  it('secrets and tokens never reach the log, even through retries and refreshes', async () => {
    const { provider, logs } = await setup((req, token) =>
      token === 'tok_1'
        ? { status: 401, json: {} }
        : fake!.apiCalls().length < 4
          ? { status: 503, json: {} }
          : { status: 201, json: intent() },
    );
    await provider.createInvoice(request);
    const output = logs.join('');
    expect(output).toContain('provider call failed, retrying');
    for (const secret of [CLIENT_SECRET, 'tok_1', 'tok_2', Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')]) {
      expect(output).not.toContain(secret);
    }
  });
});
