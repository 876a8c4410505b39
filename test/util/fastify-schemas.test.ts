import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { NO_JSON_SCHEMAS } from '../../src/util/fastify-schemas.js';

describe('fastify without JSON schema compilers', () => {
  it('serves routes without schemas, and refuses a route that declares one at registration', async () => {
    const app = Fastify({ logger: false, schemaController: NO_JSON_SCHEMAS });
    app.post('/plain', async (request) => ({ echoed: request.body }));
    app.post('/schema', { schema: { body: { type: 'object' } } }, async () => ({}));
    await expect(app.ready()).rejects.toThrow(/declare no JSON schemas/);
    await app.close();

    const plain = Fastify({ logger: false, schemaController: NO_JSON_SCHEMAS });
    plain.post('/plain', async (request) => ({ echoed: request.body }));
    const reply = await plain.inject({ method: 'POST', url: '/plain', payload: { a: 1 } });
    expect(reply.statusCode).toBe(200);
    expect(reply.json()).toEqual({ echoed: { a: 1 } });
    await plain.close();
  });
});
