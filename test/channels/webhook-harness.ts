import { Writable } from 'node:stream';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { cleanupList } from '../helpers/cleanup.js';
import { openDatabase, type Db } from '../../src/store/index.js';
import { createManualClock } from '../../src/util/clock.js';
import { LOG_REDACTION, redactingChildren, type Logger } from '../../src/util/logger.js';
import { type PaymentProvider } from '../../src/payments/index.js';
import { createGeregeProvider, createQutpayProvider, signGeregeTestPayload, signQutpayTestPayload } from '../../src/payments/adapters.js';
import { createWebhookInbox, createWebhookServer, type WebhookInbox } from '../../src/channels/webhook/index.js';
import { tempDir } from '../helpers/temp.js';
import { jsonAnswer } from '../helpers/json-http.js';

const cleanups = cleanupList();

/** Registers a cleanup run after the current test. */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups(fn);
}

/** A logger configured like the service's (same redaction), whose lines the test can read. */
export function capturedLogger(level: 'debug' | 'info' = 'debug'): {
  logger: Logger;
  lines: () => Record<string, any>[];
  text: () => string;
} {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  // The service's own redaction (by key at any depth, bindings included), with pino's numeric levels.
  const logger = redactingChildren(pino({ level, ...LOG_REDACTION }, sink));
  const text = () => chunks.join('');
  return {
    logger,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
  };
}

/** A fresh SQLite file with the migrations applied, closed after the test. */
export function testDb(): Db {
  const dir = tempDir();
  const db = openDatabase(join(dir.path, 'vendgate.db'));
  onCleanup(() => {
    if (db.open) db.close();
    dir.cleanup();
  });
  return db;
}

export const SECRETS = ['whsec_current', 'whsec_previous'];

/** The provider's real adapter, as the webhook server verifies with it; its API (never called here) unreachable. */
function adapter(kind: 'gerege' | 'qutpay'): PaymentProvider {
  const deps = { clock: createManualClock(), logger: pino({ level: 'silent' }) };
  const common = { baseUrl: 'http://127.0.0.1:9', requestTimeoutMs: 1_000, createDeadlineMs: 2_000 };
  return kind === 'gerege'
    ? createGeregeProvider(deps, { ...common, clientId: 'id', clientSecret: 'secret' })
    : createQutpayProvider(deps, { ...common, apiKey: 'qp_test_x', currency: 'KZT' });
}

/** A Gerege event body exactly as the provider would send it (compact JSON). */
export function geregeEventBody(
  overrides: { id?: string; type?: string; intentId?: string; createdSec?: number; status?: string } = {},
): Buffer {
  const intentId = overrides.intentId ?? `pi_${randomBytes(6).toString('hex')}`;
  return Buffer.from(
    JSON.stringify({
      id: overrides.id ?? `evt_${randomBytes(8).toString('hex')}`,
      object: 'event',
      type: overrides.type ?? 'payment_intent.succeeded',
      livemode: false,
      created: overrides.createdSec ?? 1_764_400_000,
      data: {
        object: {
          id: intentId,
          object: 'payment_intent',
          status: overrides.status ?? 'succeeded',
          amount: 1500,
          currency: 'MNT',
          reference: 'vm-test-abc-1',
        },
      },
    }),
  );
}

/** A webhook listener on a real socket (127.0.0.1, port 0) over a real database. */
export async function startListener(
  options: { provider?: 'gerege' | 'qutpay'; secrets?: string[]; bodyLimitBytes?: number; db?: Db } = {},
) {
  const clock = createManualClock();
  const db = options.db ?? testDb();
  const inbox: WebhookInbox = createWebhookInbox(db);
  const log = capturedLogger();
  const accepted: string[] = [];
  let delivered = 0;
  const kind = options.provider ?? 'gerege';
  const secrets = options.secrets ?? SECRETS;
  const server = createWebhookServer(
    {
      provider: adapter(kind),
      inbox,
      clock,
      logger: log.logger,
      secrets,
      toleranceSec: 300,
      onAccepted: (eventId) => accepted.push(eventId),
      onDelivered: () => {
        delivered += 1;
      },
    },
    { host: '127.0.0.1', port: 0, bodyLimitBytes: options.bodyLimitBytes ?? 65_536 },
  );
  const { url } = await server.start();
  onCleanup(() => server.stop());
  const nowSec = () => Math.floor(clock.now() / 1000);

  /** Headers that make `body` a valid delivery (signed with `secrets[secretIndex]` at `tSec`). */
  function signedHeaders(body: Buffer, opts: { secretIndex?: number; tSec?: number } = {}): Record<string, string> {
    const secret = secrets[opts.secretIndex ?? 0]!;
    if (kind === 'qutpay') return { 'content-type': 'application/json', 'x-qutpay-signature': signQutpayTestPayload(body, secret) };
    return { 'content-type': 'application/json', 'gerege-signature': signGeregeTestPayload(body, secret, opts.tSec ?? nowSec()) };
  }

  async function post(body: Buffer | string, headers: Record<string, string>, path = `/webhooks/${kind}`) {
    return jsonAnswer(await fetch(`${url}${path}`, { method: 'POST', headers, body }));
  }

  return {
    url,
    db,
    inbox,
    clock,
    log,
    accepted,
    server,
    secrets,
    signedHeaders,
    post,
    nowSec,
    delivered: () => delivered,
    rows: () => db.prepare('SELECT * FROM webhook_events ORDER BY rowid').all() as Record<string, any>[],
  };
}
