#!/usr/bin/env node
/**
 * The benchmark's peer: the webhook handler written the naive way the seed's example reads — parse
 * the JSON, verify the signature, INSERT the event in its own transaction, respond — and a naive
 * worker that, like the service's, looks the event's invoice up among the orders and marks the row
 * processed, one transaction per event. Same database file settings as the service (openDatabase:
 * WAL, synchronous=NORMAL, 1 KiB pages, same table and indexes), so the comparison is at equal
 * durability and equal work per event. No group commit, no raw-body parser scoped to the route.
 *
 *   node scripts/bench/naive-webhook-server.mjs PORT DBPATH SECRET
 *
 * GET /health answers `{ ok, synchronous }` (the PRAGMA, so the bench can print that both are equal);
 * POST /bare is a bare 204 route in the same process.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import Fastify from 'fastify';
import { openDatabase } from '../../dist/store/index.js';

const [port, dbPath, secret] = process.argv.slice(2);
const db = openDatabase(dbPath);
const insert = db.prepare(`INSERT INTO webhook_events (event_id, provider, type, object_id, livemode, raw_body, received_at)
  VALUES (?, 'sandbox', ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`);
const orderOf = db.prepare('SELECT order_id FROM order_invoices WHERE invoice_id = ?');
const processed = db.prepare('UPDATE webhook_events SET processed_at = ?, last_error = ? WHERE event_id = ? AND processed_at IS NULL');
const work = (eventId, objectId) =>
  setImmediate(() => {
    const known = objectId !== null && orderOf.get(objectId) !== undefined;
    db.transaction(() => processed.run(Date.now(), known ? null : 'not an invoice of this device', eventId))();
  });

const app = Fastify({ logger: false });
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
  try {
    done(null, { raw: body, json: JSON.parse(body) });
  } catch (err) {
    err.statusCode = 400;
    done(err);
  }
});
app.post('/webhooks/sandbox', async (request, reply) => {
  const { raw, json } = request.body;
  const header = String(request.headers['sandbox-signature'] ?? '');
  const t = /t=(\d+)/.exec(header)?.[1];
  const v1 = /v1=([0-9a-f]+)/.exec(header)?.[1];
  const expected = createHmac('sha256', secret).update(`${t}.${raw}`).digest();
  if (!t || !v1 || v1.length !== expected.length * 2 || !timingSafeEqual(Buffer.from(v1, 'hex'), expected)) return reply.code(400).send();
  const objectId = json.data?.object?.id ?? null;
  const { changes } = db.transaction(() => insert.run(json.id, json.type, objectId, json.livemode ? 1 : 0, Buffer.from(raw), Date.now()))();
  if (changes === 1) work(json.id, objectId);
  return reply.code(204).send();
});
app.post('/bare', async (_request, reply) => reply.code(204).send());
app.get('/health', async () => ({ ok: true, synchronous: db.pragma('synchronous', { simple: true }) }));
await app.listen({ host: '127.0.0.1', port: Number(port) });
