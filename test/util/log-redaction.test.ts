import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, registerSecretHeaders } from '../../src/util/logger.js';

function capture(format?: 'json' | 'journal') {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination, format }), text: () => lines.join('') };
}

describe('log redaction at any depth and inside URLs', () => {
  it('secret-named keys are censored however deep they are nested, in arrays too', () => {
    const { logger, text } = capture();
    logger.info(
      {
        settings: { provider: { gerege: { auth: { clientSecret: 'S3CRET-1' } } } },
        deep: { a: { b: { c: { d: { password: 'S3CRET-2', token: 'S3CRET-3' } } } } },
        list: [{ headers: { Authorization: 'Bearer S3CRET-4', 'x-api-key': 'S3CRET-5' } }],
        commands: { keys: [{ id: 'ops-1', privateKeyPem: 'S3CRET-6' }] },
        keep: { orderId: 7, amount: 1500 },
      },
      'nested',
    );
    const out = text();
    for (const secret of ['S3CRET-1', 'S3CRET-2', 'S3CRET-3', 'S3CRET-4', 'S3CRET-5', 'S3CRET-6']) expect(out).not.toContain(secret);
    const line = JSON.parse(out) as Record<string, any>;
    expect(line.deep.a.b.c.d).toEqual({ password: '[redacted]', token: '[redacted]' });
    expect(line.keep).toEqual({ orderId: 7, amount: 1500 });
  });

  it("a child logger's bindings and the top-level fields are censored too, the providers' signature headers included", () => {
    const { logger, text } = capture();
    // payments/webhooks.ts registers every provider's signature header when it loads; one is enough here.
    registerSecretHeaders(['X-Test-Signature']);
    const child = logger.child({ module: 'test', token: 'S3CRET-7', settings: { mqtt: { password: 'S3CRET-8' } } });
    child.info(
      { secret: 'S3CRET-9', apiKey: 'S3CRET-10', headers: { 'x-test-signature': 'S3CRET-11', 'content-type': 'application/json' } },
      'top',
    );
    const out = text();
    for (const secret of ['S3CRET-7', 'S3CRET-8', 'S3CRET-9', 'S3CRET-10', 'S3CRET-11']) expect(out).not.toContain(secret);
    const line = JSON.parse(out) as Record<string, any>;
    expect([line.module, line.token, line.secret, line.headers]).toEqual([
      'test',
      '[redacted]',
      '[redacted]',
      { 'x-test-signature': '[redacted]', 'content-type': 'application/json' },
    ]);
  });

  it('credentials inside URLs are removed from fields, error messages and the message itself', () => {
    const { logger, text } = capture('journal');
    const err = new Error('connect failed: mqtts://operator:PW-1@broker.example:8883');
    logger.error(
      { err, url: 'https://user:PW-2@api.example/v1', nested: { list: ['wss://tok-PW-3@host/mqtt'] } },
      'retrying https://admin:PW-4@relay.example',
    );
    const out = text();
    for (const secret of ['PW-1', 'PW-2', 'PW-3', 'PW-4']) expect(out).not.toContain(secret);
    expect(out).toContain('mqtts://[redacted]@broker.example:8883');
    expect(out.startsWith('<3>')).toBe(true);
    const line = JSON.parse(out.slice(3)) as Record<string, any>;
    expect(line.err.message).toBe('connect failed: mqtts://[redacted]@broker.example:8883');
    expect(line.msg).toBe('retrying https://[redacted]@relay.example');
  });
});
