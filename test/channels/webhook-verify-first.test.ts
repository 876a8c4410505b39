import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSandboxPayload } from '../../src/payments/sandbox/signature.js';
import { startService, type Service } from '../helpers/service.js';

/**
 * Invariant 7 at the webhook listener of the real service: a request that fails verification
 * writes nothing — not even the clock-skew alarm its `Date` header would move.
 */
describe('webhook listener: verify first, then anything', () => {
  let svc: Service;
  let db: Database.Database;
  const SECRET = 'sandbox-webhook-secret';
  const hourAgo = () => new Date(Date.now() - 3_600_000).toUTCString();
  const eventBody = () =>
    Buffer.from(
      JSON.stringify({
        id: `evt_${Math.random().toString(16).slice(2)}`,
        object: 'event',
        type: 'invoice.paid',
        livemode: false,
        created: Math.floor(Date.now() / 1000),
        data: { object: { id: 'sb_unknown', object: 'invoice', status: 'paid', amount: 1500, currency: 'MNT', reference: 'x' } },
      }),
    );
  const skewAlarm = () => db.prepare("SELECT name FROM alarms WHERE name = 'clock_skew'").get();
  const outboxRows = () => (db.prepare('SELECT count(*) AS n FROM outbox').get() as { n: number }).n;

  beforeAll(async () => {
    svc = await startService();
    db = new Database(svc.dbPath, { readonly: true });
  });
  afterAll(async () => {
    db?.close();
    await svc?.stop();
  });

  it('an unsigned request with a skewed Date header gets 400 and writes nothing (no alarm, no outbox row)', async () => {
    const before = { version: db.pragma('data_version', { simple: true }), outbox: outboxRows() };
    for (const signature of [undefined, 't=1,v1=00', signSandboxPayload(eventBody(), 'not-the-secret', Math.floor(Date.now() / 1000))]) {
      const response = await fetch(`${svc.webhookUrl}/webhooks/sandbox`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', date: hourAgo(), ...(signature ? { 'sandbox-signature': signature } : {}) },
        body: eventBody(),
      });
      expect(response.status).toBe(400);
    }
    expect(skewAlarm()).toBeUndefined();
    expect(outboxRows()).toBe(before.outbox);
    expect(db.pragma('data_version', { simple: true })).toBe(before.version);
  });

  it('a verified delivery with the same skewed Date raises the clock_skew alarm', async () => {
    const body = eventBody();
    const response = await fetch(`${svc.webhookUrl}/webhooks/sandbox`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        date: hourAgo(),
        'sandbox-signature': signSandboxPayload(body, SECRET, Math.floor(Date.now() / 1000)),
      },
      body,
    });
    expect(response.status).toBe(200);
    await svc.waitFor(() => skewAlarm(), { what: 'the clock_skew alarm' });
  });
});
