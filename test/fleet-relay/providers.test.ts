import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { CALLBACK_QUERY_HEADER, PROVIDER_WEBHOOKS } from '../../src/payments/index.js';
import { signGeregeTestPayload, signQutpayTestPayload } from '../../src/payments/adapters.js';
import { RELAY_PROVIDERS, parseRelaySettings } from '../../src/settings/fleet-relay/index.js';
import { createRelay } from '../../src/fleet-relay/index.js';

/**
 * Each provider owns its webhook knowledge (payments/<provider>): the relay serves exactly the
 * providers whose knowledge payments/ exports, and knows no provider by name itself.
 */
const SRC = new URL('../../src/', import.meta.url).pathname;
const SECRET = 'whsec_providers';

interface Sent {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** The same request spoiled: a body the signature does not cover, or no order in the URL. */
  spoiled: { url: string; body: string };
}

/** One signed event per provider the relay serves, for the order `reference`. */
const SIGNED: Record<string, (reference: string) => Sent> = {
  gerege(reference) {
    const body = JSON.stringify({
      id: 'evt_p1',
      object: 'event',
      type: 'payment_intent.succeeded',
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 'pi_p1', object: 'payment_intent', status: 'succeeded', reference } },
    });
    return {
      url: '/webhooks/gerege',
      body,
      headers: {
        'content-type': 'application/json',
        'gerege-event-id': 'evt_p1',
        'gerege-signature': signGeregeTestPayload(body, SECRET, Math.floor(Date.now() / 1000)),
      },
      spoiled: { url: '/webhooks/gerege', body: `${body} ` },
    };
  },
  qutpay(reference) {
    const body = JSON.stringify({ event: 'invoice.paid', invoice: { id: 'inv_p1', status: 'paid', externalOrderId: reference } });
    return {
      url: '/webhooks/qutpay',
      body,
      headers: { 'content-type': 'application/json', 'x-qutpay-signature': signQutpayTestPayload(body, SECRET) },
      spoiled: { url: '/webhooks/qutpay', body: `${body} ` },
    };
  },
  // Unsigned: the order is named in the callback URL, which is all a forger cannot get wrong and still be routed.
  qpay(reference) {
    return {
      url: `/webhooks/qpay?ref=${reference}`,
      body: '{}',
      headers: { 'content-type': 'application/json' },
      spoiled: { url: '/webhooks/qpay?ref=a&ref=b', body: '{}' },
    };
  },
};

/** The headers a listener hands the provider's verify: the request's own, and its query. */
function asListened(sent: Sent): Record<string, string> {
  const index = sent.url.indexOf('?');
  return { ...sent.headers, [CALLBACK_QUERY_HEADER]: index < 0 ? '' : sent.url.slice(index + 1) };
}

describe('the providers the relay serves', () => {
  it('are exactly those whose webhook knowledge payments/ exports, and each says which order its event concerns', () => {
    expect([...RELAY_PROVIDERS].sort()).toEqual(Object.keys(PROVIDER_WEBHOOKS).sort());
    expect(Object.keys(SIGNED).sort()).toEqual([...RELAY_PROVIDERS].sort());
    const context = { secrets: [SECRET], toleranceSec: 300, now: Date.now() };
    for (const provider of RELAY_PROVIDERS) {
      const sent = SIGNED[provider]!('vm-1-ab12cd-3-0badf00d');
      expect(PROVIDER_WEBHOOKS[provider].route(Buffer.from(sent.body), asListened(sent), context), provider).toMatchObject({
        kind: 'reference',
        reference: 'vm-1-ab12cd-3-0badf00d',
      });
      expect(PROVIDER_WEBHOOKS[provider].target({}), provider).toMatchObject({ kind: 'none' });
    }
  });

  it('each has its route on the relay, verified with its own module (a bad signature is 400, a good one passes)', async () => {
    const relay = createRelay(
      parseRelaySettings({
        relay: {
          port: 0,
          host: '127.0.0.1',
          providers: [...RELAY_PROVIDERS],
          webhookSecrets: Object.fromEntries(RELAY_PROVIDERS.map((p) => [p, [SECRET]])),
        },
        mqtt: { url: 'mqtt://127.0.0.1:1', prefix: 'providers-test', reconnectMinMs: 60_000 },
        log: { level: 'silent' },
      }),
      { logger: pino({ level: 'silent' }), lookup: null },
    );
    try {
      for (const provider of RELAY_PROVIDERS) {
        const { url, body, headers, spoiled } = SIGNED[provider]!('vm-1-ab12cd-3-0badf00d');
        const good = await relay.inject({ method: 'POST', url, headers, payload: body });
        // Verified; no broker here, so the relay cannot know the route yet: 503, the provider retries.
        expect(good.statusCode, provider).toBe(503);
        const bad = await relay.inject({ method: 'POST', url: spoiled.url, headers, payload: spoiled.body });
        expect(bad.statusCode, provider).toBe(400);
      }
    } finally {
      await relay.stop();
    }
  });

  it('src/fleet-relay/ names no provider, imports no adapter and parses no provider body', () => {
    const dir = join(SRC, 'fleet-relay');
    const names = new RegExp([...RELAY_PROVIDERS, 'sandbox'].join('|'), 'i');
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), 'utf8');
      // Code only: a comment may say which provider's events need a lookup.
      const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
      expect(code, `${file} names a provider`).not.toMatch(names);
      // payments/'s faces only: its index, the route-lookup table, and adapters.ts (every adapter's
      // exports: the Kaspi caller's wire schemas), never one adapter's own module.
      expect(code, `${file} imports an adapter`).not.toMatch(/from '\.\.\/payments\/(?!(?:index|route-lookup|adapters)\.js')/);
      expect(text, file).not.toContain('Record<string, any>');
    }
  });
});
