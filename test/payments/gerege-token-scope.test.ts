import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { signGeregeTestPayload } from '../../src/payments/adapters.js';
import { createRelay } from '../../src/fleet-relay/index.js';
import { parseRelaySettings } from '../../src/settings/fleet-relay/index.js';
import { silentLogger } from '../../src/util/logger.js';

/** A Gerege token endpoint that records the form of each token request; every other path is 404. */
async function tokenEndpoint() {
  const forms: URLSearchParams[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk) => (body += String(chunk)));
    req.on('end', () => {
      if (req.url === '/oauth2/token') {
        forms.push(new URLSearchParams(body));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ access_token: 'tok', token_type: 'Bearer', expires_in: 3600 }));
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such intent' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forms,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

describe("the relay's Gerege lookup key asks for the read scope", () => {
  it('relay settings default routeLookup.scope to payments:read, and the relay’s lookup of a refund event’s intent asks for it', async () => {
    const settings = parseRelaySettings({
      relay: {
        providers: ['gerege'],
        webhookSecrets: { gerege: ['w'] },
        routeLookup: { baseUrl: 'https://api.example', clientId: 'c', clientSecret: 's' },
      },
      mqtt: { url: 'mqtts://broker.example:8883' },
    });
    expect(settings.relay.routeLookup.scope).toBe('payments:read');

    // The relay builds its lookup client from payments/ (ROUTE_LOOKUP_CLIENTS.gerege in route-lookup.ts): a
    // refund event names only its intent, so the relay reads the intent with the read-only key.
    const endpoint = await tokenEndpoint();
    close = endpoint.close;
    const relay = createRelay(
      parseRelaySettings({
        relay: {
          port: 0,
          host: '127.0.0.1',
          providers: ['gerege'],
          webhookSecrets: { gerege: ['w'] },
          routeLookup: { baseUrl: endpoint.url, clientId: 'c', clientSecret: 's', requestTimeoutMs: 2_000 },
        },
        mqtt: { url: 'mqtt://127.0.0.1:1', prefix: 'scope-test', reconnectMinMs: 60_000 },
        log: { level: 'silent' },
      }),
      { logger: silentLogger() },
    );
    const body = JSON.stringify({
      id: 'evt_r1',
      object: 'event',
      type: 'refund.succeeded',
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 're_1', object: 'refund', payment_intent: 'pi_1', amount: 100, status: 'succeeded' } },
    });
    try {
      const answer = await relay.inject({
        method: 'POST',
        url: '/webhooks/gerege',
        headers: {
          'content-type': 'application/json',
          'gerege-event-id': 'evt_r1',
          'gerege-signature': signGeregeTestPayload(body, 'w', Math.floor(Date.now() / 1000)),
        },
        payload: body,
      });
      // The intent is unknown to the endpoint (404): not routable, nothing published.
      expect(answer.statusCode).not.toBe(400);
      expect(relay.stats().lookups).toBe(1);
    } finally {
      await relay.stop();
    }
    expect(endpoint.forms).toHaveLength(1);
    expect(endpoint.forms[0]!.get('grant_type')).toBe('client_credentials');
    expect(endpoint.forms[0]!.get('scope')).toBe('payments:read');
  });
});
