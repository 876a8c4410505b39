import { request as httpRequest } from 'node:http';
import fc from 'fast-check';

/**
 * Random HTTP requests: methods, paths (routes of both listeners with bad and good parameters, and
 * garbage), headers and bodies up to and past the body limit. Placeholders `{order}` and
 * `{invoice}` are filled at send time with ids that exist, so some requests are valid.
 */

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

export interface FuzzResponse {
  status: number;
  contentType: string;
  body: string;
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'PURGE', 'FOO'];

/** Anything outside visible ASCII is percent-encoded (the client refuses it raw); '%' stays, so broken escapes happen. */
function pathSafe(raw: string): string {
  return [...raw].map((c) => (/^[\x21-\x7e]$/.test(c) ? c : encodeURIComponent(c))).join('');
}

const idText = fc.oneof(
  fc.constant('{order}'),
  fc.constantFrom('0', '-1', '1.5', 'abc', '1e3', '0x10', '99999999999999999999', '%00', '..', '%2e%2e', '١', ''),
  fc.nat().map(String),
  fc.string({ maxLength: 20 }).map(pathSafe),
);

const invoiceText = fc.oneof(
  fc.constant('{invoice}'),
  fc.constantFrom('sb_0000', 'sb_', 'x'.repeat(65), '..%2f..%2fetc%2fpasswd', '%zz', "'; DROP TABLE orders;--"),
  fc.string({ maxLength: 70 }).map(pathSafe),
);

const query = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  fc.string({ maxLength: 40 }).map((q) => `?${pathSafe(q)}`),
  fc.constantFrom('?__proto__[x]=1', '?a=1&a=2', '?slot=A1', '?%'),
);

export function pathArbitrary(routes: 'local' | 'webhook'): fc.Arbitrary<string> {
  const known =
    routes === 'local'
      ? fc.oneof(
          fc.constant('/api/orders'),
          idText.map((id) => `/api/orders/${id}`),
          idText.map((id) => `/api/orders/${id}/cancel`),
          fc.constantFrom(
            '/api/state',
            '/api/events',
            '/healthz',
            '/metrics',
            '/',
            '/index.html',
            '/app.js',
            '/style.css',
            '/i18n/en.json',
            '/sandbox/assets/pay.js',
            '/sandbox/assets/../../package.json',
            '/api/',
            '/api/orders/',
            '/API/ORDERS',
          ),
          invoiceText.map((id) => `/sandbox/pay/${id}`),
          fc.string({ maxLength: 20 }).map((f) => `/sandbox/assets/${pathSafe(f)}`),
        )
      : fc.oneof(
          fc.constantFrom(
            '/webhooks/sandbox',
            '/webhooks/gerege',
            '/webhooks/qutpay',
            '/webhooks/health',
            '/webhooks/',
            '/webhooks/sandbox/',
            '/webhooks/SANDBOX',
          ),
          fc.string({ maxLength: 20 }).map((p) => `/webhooks/${pathSafe(p)}`),
        );
  const garbage = fc.oneof(
    fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)),
    fc.string({ maxLength: 200 }).map((p) => `/${pathSafe(p)}`),
    fc.constantFrom('//', '/%', '/%%32%65', '/' + 'a'.repeat(3000), '/..', '/./api/orders', '*'),
  );
  return fc.tuple(fc.oneof({ weight: 3, arbitrary: known }, { weight: 1, arbitrary: garbage }), query).map(([p, q]) => pathSafe(p + q));
}

const headerName = fc
  .stringMatching(/^[a-z][a-z0-9-]{0,20}$/)
  .filter((n) => !['content-length', 'transfer-encoding', 'host', 'connection', 'expect', 'upgrade'].includes(n));
const headerValue = fc.string({ maxLength: 100 }).map((v) => v.replace(/[^\x20-\x7e]/g, ''));

const contentType = fc.option(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=utf-16',
    'text/plain',
    'text/html',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/octet-stream',
    'application/jsonx',
    'APPLICATION/JSON',
    'application/merge-patch+json',
    ';;;',
    '',
  ),
  { nil: undefined },
);

export function bodyArbitrary(limitBytes: number): fc.Arbitrary<Buffer | null> {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.constantFrom('A1', 'A2', 'Z9', '', 'A1 ', '<script>').map((slot) => json({ slot })) },
    fc
      .constantFrom(
        '{}',
        '[]',
        'null',
        '"A1"',
        '{"slot":1}',
        '{"slot":null}',
        '{"slot":"A1","x":1}',
        '{"__proto__":{"slot":"A1"}}',
        '{"constructor":{"prototype":{"polluted":true}}}',
        '{"slot":"A1"',
        '{"slot":"A1"}garbage',
        '\u0000',
        '{"slot":"\\ud800"}',
      )
      .map((s) => Buffer.from(s)),
    fc.json({ maxDepth: 4 }).map((s) => Buffer.from(s)),
    fc.string({ maxLength: 300 }).map((s) => Buffer.from(s)),
    fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)),
    fc.nat(64).map((depth) => Buffer.from('['.repeat(depth * 100) + ']'.repeat(depth * 100))),
    // Up to the limit, and past it (413).
    fc
      .integer({ min: Math.max(0, limitBytes - 64), max: limitBytes * 2 })
      .map((n) => Buffer.from(`{"slot":"${'A'.repeat(Math.max(0, n - 11))}"}`)),
  );
}

/** Requests that do something (an order, a cancel, a sandbox payment), so the device moves through its phases. */
const validLocal: fc.Arbitrary<FuzzRequest> = fc
  .constantFrom(
    { path: '/api/orders', body: '{"slot":"A1"}' },
    { path: '/api/orders', body: '{"slot":"A2"}' },
    { path: '/api/orders/{order}/cancel', body: '{}' },
    { path: '/sandbox/pay/{invoice}', body: null },
    { path: '/sandbox/pay/{invoice}', body: null },
  )
  .map(({ path, body }): FuzzRequest => ({
    method: 'POST',
    path,
    body: body === null ? null : Buffer.from(body),
    headers: body === null ? {} : { 'content-type': 'application/json' },
  }));

export function requestArbitrary(routes: 'local' | 'webhook', limitBytes: number): fc.Arbitrary<FuzzRequest> {
  const random = fc
    .record({
      method: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('GET', 'POST') }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      path: pathArbitrary(routes),
      contentType,
      extra: fc.dictionary(headerName, headerValue, { maxKeys: 4 }),
      body: bodyArbitrary(limitBytes),
    })
    .map(({ method, path, contentType: type, extra, body }) => ({
      method,
      path,
      body,
      headers: { ...extra, ...(type === undefined ? {} : { 'content-type': type }) },
    }));
  return routes === 'local' ? fc.oneof({ weight: 6, arbitrary: random }, { weight: 1, arbitrary: validLocal }) : random;
}

/**
 * One request on a fresh connection. A stream (SSE) is cut after its headers; the status is what
 * counts.
 */
export function send(base: string, req: FuzzRequest, fill: (path: string) => string): Promise<FuzzResponse> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body) headers['content-length'] = req.body.length;
    const r = httpRequest(
      { host: url.hostname, port: url.port, method: req.method, path: fill(req.path), headers, agent: false, timeout: 10_000 },
      (res) => {
        const type = String(res.headers['content-type'] ?? '');
        if (type.startsWith('text/event-stream')) {
          resolve({ status: res.statusCode ?? 0, contentType: type, body: '' });
          res.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: type, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    r.on('timeout', () => r.destroy(new Error(`no answer to ${req.method} ${req.path}`)));
    r.on('error', (err) => {
      // The server may close the socket before reading a body it refused (413): that is an answer too.
      if ((err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET') {
        resolve({ status: 0, contentType: '', body: String(err) });
      } else {
        reject(err);
      }
    });
    r.end(req.body ?? undefined);
  });
}
