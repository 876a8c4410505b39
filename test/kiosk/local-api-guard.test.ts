import Database from 'better-sqlite3';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';

/**
 * The local API of the real service, driven as a hostile web page in the kiosk browser would:
 * raw HTTP with the headers a browser sends (foreign Origin, rebound Host, form content types).
 */
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

function send(url: string, options: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: hostname, port, method: options.method ?? 'GET', path: options.path, headers: options.headers ?? {} },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const json = { 'content-type': 'application/json' };

describe('local API: only the kiosk can drive it', () => {
  let svc: Service;
  let sandbox: Database.Database;
  let vendgate: Database.Database;
  const invoices = () => (sandbox.prepare('SELECT count(*) AS n FROM sandbox_invoices').get() as { n: number }).n;
  const orderState = (id: number) => (vendgate.prepare('SELECT state FROM orders WHERE id = ?').get(id) as { state: string }).state;
  const create = (slot: string, headers: Record<string, string> = {}) =>
    send(svc.localUrl, { method: 'POST', path: '/api/orders', headers: { ...json, ...headers }, body: JSON.stringify({ slot }) });

  beforeAll(async () => {
    svc = await startService({
      config: { http: { local: { allowedHosts: ['kiosk.local'], ordersPerMinute: 5, doublePressWindowMs: 3_000 } } },
    });
    sandbox = new Database(join(svc.dir, 'sandbox.db'), { readonly: true });
    vendgate = new Database(svc.dbPath, { readonly: true });
  });
  afterAll(async () => {
    sandbox?.close();
    vendgate?.close();
    await svc?.stop();
  });

  it('a cross-site POST from another page (foreign Origin, no body or a form body) cancels nothing', async () => {
    const created = await create('A1');
    expect(created.status).toBe(201);
    const id = created.json.orderId as number;
    const host = new URL(svc.localUrl).host;
    const attempts: Record<string, string>[] = [
      { origin: 'http://evil.example', host },
      { origin: 'http://evil.example', host, 'content-type': 'application/x-www-form-urlencoded' },
      { origin: 'null', host, 'content-type': 'text/plain' },
      { origin: 'http://evil.example', host, 'content-type': 'application/json' },
    ];
    for (const headers of attempts) {
      const answer = await send(svc.localUrl, {
        method: 'POST',
        path: `/api/orders/${id}/cancel`,
        headers,
        body: headers['content-type'] === 'application/json' ? '{}' : 'x=1',
      });
      expect(answer.status).toBe(403);
      expect(answer.json.error.code).toBe('VG_ERR_FORBIDDEN');
    }
    // Without a content type a same-origin caller is still refused: state changes are JSON only.
    const bare = await send(svc.localUrl, { method: 'POST', path: `/api/orders/${id}/cancel`, headers: { host } });
    expect(bare.status).toBe(415);
    expect(orderState(id)).toBe('awaiting_payment');
  });

  it('a foreign Host (DNS rebinding) is refused on every route; 127.0.0.1, localhost and allowedHosts are served', async () => {
    const { port } = new URL(svc.localUrl);
    for (const path of ['/', '/api/state', '/healthz', '/api/events']) {
      const answer = await send(svc.localUrl, { path, headers: { host: `attacker.example:${port}` } });
      expect(answer.status, path).toBe(403);
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `kiosk.local:${port}`, 'KIOSK.local']) {
      expect((await send(svc.localUrl, { path: '/api/state', headers: { host } })).status, host).toBe(200);
    }
  });

  it("the kiosk's own page (same Origin) and curl (no Origin) can order and cancel", async () => {
    const own = { origin: svc.localUrl };
    const created = await create('A2', own);
    expect(created.status).toBe(201);
    const canceled = await send(svc.localUrl, {
      method: 'POST',
      path: `/api/orders/${created.json.orderId}/cancel`,
      headers: { ...json, ...own },
      body: '{}',
    });
    expect(canceled.status).toBe(200);
    expect(canceled.json.state).toBe('canceled');
    const byCurl = await send(svc.localUrl, {
      method: 'POST',
      path: `/api/orders/${(await create('A1')).json.orderId}/cancel`,
      headers: json,
    });
    expect(byCurl.status).toBe(200);
  });

  it('a double press (together, or again within the window) gives one order, one invoice, one pay URL', async () => {
    const before = invoices();
    const [first, second] = await Promise.all([create('A2'), create('A2')]);
    const again = await create('A2');
    const answers = [first, second, again];
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 201]);
    expect(new Set(answers.map((a) => a.json.orderId)).size).toBe(1);
    expect(new Set(answers.map((a) => a.json.payUrl)).size).toBe(1);
    expect(invoices()).toBe(before + 1);
  });

  it('order creation is rate-limited with a clear 429 and Retry-After', async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < 30; i += 1) answers.push(await create(i % 2 === 0 ? 'A1' : 'A2'));
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.json.error.code).toBe('VG_ERR_RATE_LIMITED');
    expect(limited[0]!.json.error.message).toContain('at most 5 a minute');
    expect(Number(limited[0]!.headers['retry-after'])).toBeGreaterThan(0);
    // Over the whole test file: at most ordersPerMinute invoices within the minute.
    expect(invoices()).toBeLessThanOrEqual(5);
  });
});
