#!/usr/bin/env node
/**
 * The benchmark's peer row: the webhook handler written the naive way the seed's example reads —
 * parse the JSON, verify the signature, INSERT the event in its own transaction, respond — on the
 * same database file settings as the service (WAL, synchronous=NORMAL, same table). No group
 * commit, no raw-body parser scoped to the route, no worker hand-off.
 *
 *   node scripts/bench/naive-webhook-server.mjs PORT DBPATH SECRET
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import Fastify from 'fastify';
import { openDatabase } from '../../dist/store/index.js';

const [port, dbPath, secret] = process.argv.slice(2);
const db = openDatabase(dbPath);
const insert = db.prepare(`INSERT INTO webhook_events (event_id, provider, type, object_id, livemode, raw_body, received_at)
  VALUES (?, 'sandbox', ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`);
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
  insert.run(json.id, json.type, json.data?.object?.id ?? null, json.livemode ? 1 : 0, Buffer.from(raw), Date.now());
  return reply.code(204).send();
});
app.post('/bare', async (_request, reply) => reply.code(204).send());
app.get('/health', async () => ({ ok: true }));
await app.listen({ host: '127.0.0.1', port: Number(port) });
