import { request as httpRequest } from 'node:http';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSandboxPayload } from '../../src/payments/sandbox/signature.js';
import { startService, type Service } from '../helpers/service.js';
import { startSlowClients, type SlowClients } from '../helpers/slow-clients.js';

/**
 * Slow and idle clients against both listeners of the real service, over real sockets, with the
 * default limits: nobody holds a listener open, and signed webhooks keep flowing meanwhile.
 */
const SECRET = 'sandbox-webhook-secret';

/**
 * A signed webhook on a connection of its own, as a provider's delivery attempt: reusing a
 * keep-alive socket the listener has just shed (idle, at the cap) would test the client's socket
 * pool, not the listener.
 */
function signedWebhook(url: string, id: string): Promise<{ status: number; arrayBuffer(): Promise<ArrayBuffer> }> {
  const body = Buffer.from(
    JSON.stringify({
      id,
      object: 'event',
      type: 'invoice.paid',
      livemode: false,
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 'sb_unknown', object: 'invoice', status: 'paid', amount: 1500, currency: 'MNT', reference: 'x' } },
    }),
  );
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${url}/webhooks/sandbox`,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'sandbox-signature': signSandboxPayload(body, SECRET, Math.floor(Date.now() / 1000)),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const all = Buffer.concat(chunks);
          resolve({
            status: response.statusCode ?? 0,
            arrayBuffer: async () => all.buffer.slice(all.byteOffset, all.byteOffset + all.length) as ArrayBuffer,
          });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('listener limits (default settings)', () => {
  let svc: Service;
  const clients: SlowClients[] = [];
  const slow = (options: Parameters<typeof startSlowClients>[0]) => {
    const started = startSlowClients(options);
    clients.push(started);
    return started;
  };

  beforeAll(async () => {
    svc = await startService();
  });
  afterAll(async () => {
    for (const c of clients) c.stop();
    await svc?.stop();
  });

  it('clients dripping a request body one byte at a time are cut within seconds, on both listeners', async () => {
    const webhook = slow({ url: svc.webhookUrl, count: 20, mode: 'body' });
    const local = slow({ url: svc.localUrl, count: 20, mode: 'body', path: '/api/orders' });
    await svc.waitFor(() => webhook.closedByServer() === 20 && local.closedByServer() === 20, {
      what: 'the server to close all 40 slow-body connections',
    });
    expect(webhook.open() + local.open()).toBe(0);
  }, 120_000);

  it('clients that send their headers slowly, or nothing at all, are cut too', async () => {
    const dripping = slow({ url: svc.webhookUrl, count: 10, mode: 'headers', dripEveryMs: 300 });
    const silent = slow({ url: svc.webhookUrl, count: 10, mode: 'silent' });
    const silentLocal = slow({ url: svc.localUrl, count: 10, mode: 'silent' });
    await svc.waitFor(() => dripping.closedByServer() === 10 && silent.closedByServer() === 10 && silentLocal.closedByServer() === 10, {
      what: 'the server to close slow-header and silent connections',
    });
  }, 120_000);

  it('signed webhooks keep flowing while 200 slow clients hang on (and reconnect when cut)', async () => {
    const attack = slow({ url: svc.webhookUrl, count: 200, mode: 'body', reconnect: true, dripEveryMs: 500 });
    await svc.waitFor(() => attack.open() >= 100, { timeoutMs: 20_000, what: 'the slow clients to hold connections' });
    const ids = Array.from({ length: 20 }, (_, i) => `evt_flow_${i}_${Date.now()}`);
    for (const id of ids) {
      const response = await signedWebhook(svc.webhookUrl, id);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    attack.stop();
    const db = new Database(svc.dbPath, { readonly: true });
    try {
      const stored = db
        .prepare(`SELECT count(*) AS n FROM webhook_events WHERE event_id IN (${ids.map(() => '?').join(',')})`)
        .get(...ids) as { n: number };
      expect(stored.n).toBe(ids.length);
    } finally {
      db.close();
    }
  }, 120_000);
});

describe('webhook listener connection cap', () => {
  let svc: Service;
  let clients: SlowClients | null = null;
  beforeAll(async () => {
    // Long timeouts, so that only the cap can close these connections.
    svc = await startService({
      config: { http: { webhook: { maxConnections: 10, headersTimeoutMs: 60_000, requestTimeoutMs: 120_000, idleTimeoutMs: 120_000 } } },
    });
  });
  afterAll(async () => {
    clients?.stop();
    await svc?.stop();
  });

  it('beyond http.webhook.maxConnections the oldest connections are closed, and a webhook still gets through', async () => {
    clients = startSlowClients({ url: svc.webhookUrl, count: 30, mode: 'silent' });
    await svc.waitFor(() => clients!.closedByServer() >= 20 && clients!.open() <= 10, {
      timeoutMs: 20_000,
      what: 'the cap to close the oldest connections',
    });
    const response = await signedWebhook(svc.webhookUrl, `evt_cap_${Date.now()}`);
    expect(response.status).toBe(200);
  }, 120_000);
});
