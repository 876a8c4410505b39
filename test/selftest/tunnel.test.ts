import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { startService, freePort } from '../helpers/service.js';
import { openDatabase } from '../../src/store/index.js';
import { byName, onCleanup, selftestFor } from './harness.js';

/**
 * A stand-in for cloudflared on `port`: forwards by path prefix to the given origins, or answers
 * 404 (the template's `http_status:404`). `routes` maps a path prefix to an origin URL.
 */
async function fakeTunnel(port: number, routes: Record<string, string>): Promise<void> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const prefix = Object.keys(routes).find((p) => request.url!.startsWith(p));
      if (prefix === undefined) {
        response.statusCode = 404;
        response.end();
        return;
      }
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)),
      ) as Record<string, string>;
      fetch(`${routes[prefix]}${request.url}`, {
        method: request.method,
        headers,
        body: request.method === 'POST' ? Buffer.concat(chunks) : undefined,
      })
        .then(async (answer) => {
          response.statusCode = answer.status;
          response.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => {
          response.statusCode = 502;
          response.end();
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  onCleanup(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
}

async function serviceBehindTunnel() {
  const tunnelPort = await freePort();
  const svc = await startService({ config: { http: { webhook: { publicUrl: `http://127.0.0.1:${tunnelPort}` } } } });
  onCleanup(() => svc.stop());
  return { svc, tunnelPort };
}

describe('the tunnel round trip (http.webhook.publicUrl)', () => {
  it('a tunnel that forwards only /webhooks/: PASS, the signed test event is in the inbox, and nothing else moved', async () => {
    const { svc, tunnelPort } = await serviceBehindTunnel();
    await fakeTunnel(tunnelPort, { '/webhooks/': svc.webhookUrl });

    const { report } = await selftestFor(svc.configPath);

    expect(byName(report.checks)['webhook.tunnel']).toMatchObject({ status: 'PASS' });
    const db = openDatabase(svc.dbPath, { readonly: true });
    try {
      const rows = db.prepare("SELECT type, processed_at FROM webhook_events WHERE event_id LIKE 'evt_selftest_%'").all() as {
        type: string;
        processed_at: number | null;
      }[];
      expect(rows).toEqual([{ type: 'vendgate.selftest', processed_at: expect.any(Number) }]);
      expect((db.prepare('SELECT count(*) AS n FROM orders').get() as { n: number }).n).toBe(0);
    } finally {
      db.close();
    }
  });

  it('a tunnel that forwards everything: FAIL, it exposes the local API to the internet', async () => {
    const { svc, tunnelPort } = await serviceBehindTunnel();
    await fakeTunnel(tunnelPort, { '/webhooks/': svc.webhookUrl, '/': svc.localUrl });

    const { report } = await selftestFor(svc.configPath);
    const line = byName(report.checks)['webhook.tunnel']!;

    expect(line.status).toBe('FAIL');
    expect(line.detail).toMatch(/exposes the local API \(\/api\/state answered 200\)/);
    expect(line.hint).toMatch(/\^\/webhooks\/.*http_status:404/);
  });

  it('a tunnel pointed at the local listener instead of the webhook listener: FAIL with the ingress to fix', async () => {
    const { svc, tunnelPort } = await serviceBehindTunnel();
    await fakeTunnel(tunnelPort, { '/webhooks/': svc.localUrl });

    const { report } = await selftestFor(svc.configPath);
    const line = byName(report.checks)['webhook.tunnel']!;

    expect(line.status).toBe('FAIL');
    expect(line.detail).toMatch(/answered 404: the tunnel does not route \/webhooks\/sandbox/);
  });

  it('a public URL that leads to another device: WARN, accepted there but not in this inbox', async () => {
    const { svc, tunnelPort } = await serviceBehindTunnel();
    const other = await startService();
    onCleanup(() => other.stop());
    await fakeTunnel(tunnelPort, { '/webhooks/': other.webhookUrl });

    const { report } = await selftestFor(svc.configPath);
    const line = byName(report.checks)['webhook.tunnel']!;

    expect(line.status).toBe('WARN');
    expect(line.detail).toMatch(/not in this device's inbox/);
  });

  it('a tunnel that is down: FAIL naming the tunnel service', async () => {
    const { svc } = await serviceBehindTunnel();

    const { report } = await selftestFor(svc.configPath);
    const line = byName(report.checks)['webhook.tunnel']!;

    expect(line.status).toBe('FAIL');
    expect(line.hint).toMatch(/systemctl status vendgate-tunnel/);
  });
});
