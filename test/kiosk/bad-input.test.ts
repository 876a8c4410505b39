import { describe, expect, it } from 'vitest';
import { createFakeKioskDeps } from '../fakes/kiosk-deps.js';
import { kioskForInject, startKiosk } from './harness.js';

/** Invariant 7: bad input gets a clear 4xx and changes nothing — the order service is never asked. */
describe('bad input to the local API changes nothing', () => {
  const post = (payload: string, contentType = 'application/json') => ({
    method: 'POST' as const,
    url: '/api/orders',
    payload,
    headers: { 'content-type': contentType },
  });

  it.each([
    ['malformed JSON', '{"slot": "A1"', 'not valid JSON'],
    ['an empty body', '', 'empty'],
    ['a JSON array', '["A1"]', 'JSON object'],
    ['a JSON string', '"A1"', 'JSON object'],
    ['JSON null', 'null', 'JSON object'],
    ['a numeric slot', '{"slot": 1}', 'slot must be'],
    ['an empty slot', '{"slot": ""}', 'slot must be'],
    ['a slot with markup', '{"slot": "<b>A1</b>"}', 'slot must be'],
    ['a slot longer than 16', `{"slot": "${'A'.repeat(17)}"}`, 'slot must be'],
    ['an unknown field', '{"slot": "A1", "amount": 1}', 'unknown field "amount"'],
    ['a prototype-poisoning key', '{"__proto__": {"slot": "A1"}}', ''],
  ])('refuses %s with 400 and never calls create', async (_name, payload, messagePart) => {
    const deps = createFakeKioskDeps();
    const res = await kioskForInject(deps).inject(post(payload));
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VG_ERR_BAD_REQUEST');
    expect(res.json().error.message).toContain(messagePart);
    expect(deps.calls.create).toEqual([]);
  });

  it.each([['text/plain'], ['application/x-www-form-urlencoded'], ['multipart/form-data; boundary=x']])(
    'refuses Content-Type %s with 415 and never calls create',
    async (contentType) => {
      const deps = createFakeKioskDeps();
      const res = await kioskForInject(deps).inject(post('slot=A1', contentType));
      expect(res.statusCode).toBe(415);
      expect(res.json()).toEqual({ error: { code: 'VG_ERR_BAD_REQUEST', message: 'unsupported Content-Type; send application/json' } });
      expect(deps.calls.create).toEqual([]);
    },
  );

  it('refuses a POST without a body (and so without a Content-Type) with 415 and never calls create', async () => {
    const deps = createFakeKioskDeps();
    const res = await kioskForInject(deps).inject({ method: 'POST', url: '/api/orders' });
    expect(res.statusCode).toBe(415);
    expect(deps.calls.create).toEqual([]);
  });

  it('refuses a body over the limit with 413 over a real socket and never calls create', async () => {
    const deps = createFakeKioskDeps();
    const { url } = await startKiosk(deps, { bodyLimitBytes: 1_024 });
    const res = await fetch(`${url}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: 'A1', padding: 'x'.repeat(2_000) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { code: 'VG_ERR_BAD_REQUEST', message: 'the body is larger than 1024 bytes' } });
    expect(deps.calls.create).toEqual([]);
  });

  it.each([['abc'], ['0'], ['-1'], ['1.5'], ['1e3'], ['01'], ['99999999999999999999'], ['%20']])(
    'refuses order id %s with 400 on read and cancel, and never cancels',
    async (id) => {
      const deps = createFakeKioskDeps();
      const server = kioskForInject(deps);
      const read = await server.inject({ method: 'GET', url: `/api/orders/${id}` });
      const cancel = await server.inject({
        method: 'POST',
        url: `/api/orders/${id}/cancel`,
        headers: { 'content-type': 'application/json' },
        payload: '{}',
      });
      for (const res of [read, cancel]) {
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ error: { code: 'VG_ERR_BAD_REQUEST', message: 'the order id must be a positive integer' } });
      }
      expect(deps.calls.cancel).toEqual([]);
    },
  );
});
