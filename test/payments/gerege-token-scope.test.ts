import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createGeregeProvider } from '../../src/payments/gerege/adapter.js';
import { parseRelaySettings } from '../../src/settings/index.js';
import { systemClock } from '../../src/util/clock.js';
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

describe("issue 25: the relay's Gerege lookup key asks for the read scope", () => {
  it('relay settings default routeLookup.scope to payments:read, and the token request carries it', async () => {
    const settings = parseRelaySettings({
      relay: {
        providers: ['gerege'],
        webhookSecrets: { gerege: ['w'] },
        routeLookup: { baseUrl: 'https://api.example', clientId: 'c', clientSecret: 's' },
      },
      mqtt: { url: 'mqtts://broker.example:8883' },
    });
    expect(settings.relay.routeLookup.scope).toBe('payments:read');

    const endpoint = await tokenEndpoint();
    close = endpoint.close;
    const provider = createGeregeProvider(
      { clock: systemClock, logger: silentLogger() },
      {
        baseUrl: endpoint.url,
        clientId: 'c',
        clientSecret: 's',
        requestTimeoutMs: 2_000,
        createDeadlineMs: 4_000,
        scope: settings.relay.routeLookup.scope,
      },
    );
    await provider.getInvoice('pi_1').catch(() => null);
    expect(endpoint.forms).toHaveLength(1);
    expect(endpoint.forms[0]!.get('grant_type')).toBe('client_credentials');
    expect(endpoint.forms[0]!.get('scope')).toBe('payments:read');
  });
});
