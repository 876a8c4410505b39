import { loadSettings, type Settings } from '../settings/index.js';
import { openDatabase, type Db } from '../store/index.js';
import { createOutbox } from '../outbox/index.js';
import { createLedger } from '../ledger/index.js';
import { createOrderRepository } from '../orders/index.js';
import { createProvider, type PaymentProvider } from '../payments/index.js';
import { createSandboxProvider, sandboxDbPath } from '../payments/sandbox/index.js';
import { createWebhookInbox, createWebhookWorker } from '../channels/webhook/index.js';
import { systemClock, toIso } from '../util/clock.js';
import { createLogger } from '../util/logger.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';

/** Operators' tools look back this far unless told otherwise. */
export const DEFAULT_LOOKBACK_MS = 24 * 60 * 60 * 1000;

/** `--since ISO` → ms; absent → the last 24 hours. */
export function parseSince(since: string | undefined, now: number): number {
  if (since === undefined) return now - DEFAULT_LOOKBACK_MS;
  const at = Date.parse(since);
  if (Number.isNaN(at)) throw new UsageError(`--since must be an ISO 8601 time such as 2026-11-28T00:00:00Z, got "${since}"`);
  return at;
}

/**
 * The provider the service would use, built for a one-off command. The sandbox is "the provider"
 * of the demo: its own SQLite file beside the database, shared with the running service.
 */
export async function providerForCli(settings: Readonly<Settings>, io: CliIo): Promise<{ provider: PaymentProvider; close: () => void }> {
  const logger = createLogger({ level: 'warn', destination: io.stderr });
  if (settings.provider.name === 'sandbox') {
    const sandbox = createSandboxProvider(
      { clock: systemClock, logger },
      {
        dbPath: sandboxDbPath(settings.storage.path),
        payUrl: (id) => `http://127.0.0.1:${settings.http.local.port}/sandbox/pay/${id}`,
        webhookSecret: settings.provider.webhookSecrets[0] ?? 'sandbox-webhook-secret',
      },
    );
    return { provider: sandbox.provider, close: () => sandbox.close() };
  }
  return { provider: await createProvider({ clock: systemClock, logger }, settings), close: () => {} };
}

/**
 * `vendgate replay [--since ISO]`: re-runs the stored webhook events through the worker path (GET
 * the object, observe()). Safe while the service runs: the ledger records each (invoice, status)
 * once, and a vend or refund it queues is carried out by the running service.
 */
export async function replayCommand(options: { config?: string; since?: string }, io: CliIo): Promise<number> {
  const now = systemClock.now();
  const sinceMs = parseSince(options.since, now);
  const { settings } = loadSettings({ path: options.config, env: io.env });
  const db: Db = openDatabase(settings.storage.path);
  const { provider, close } = await providerForCli(settings, io);
  try {
    const logger = createLogger({ level: 'warn', destination: io.stderr });
    const outbox = createOutbox({ db, clock: systemClock, deviceId: settings.device.id });
    const orders = createOrderRepository({ db, clock: systemClock });
    const ledger = createLedger({ db, clock: systemClock, logger, outbox, orderRepository: orders });
    const worker = createWebhookWorker(
      {
        db,
        clock: systemClock,
        logger,
        provider,
        ledger,
        outbox,
        inbox: createWebhookInbox(db),
        knowsInvoice: (invoiceId) => orders.getByInvoice(invoiceId) !== undefined,
      },
      settings.http.webhook,
    );
    const report = await worker.replay(sinceMs);
    const { recorded, duplicate, ignored, rejected, failed } = report.outcomes;
    print(
      io.stdout,
      `replayed ${report.events} stored event(s) received since ${toIso(sinceMs)}: ` +
        `${recorded} recorded, ${duplicate} already known, ${ignored} ignored, ${rejected} rejected, ${failed} failed`,
    );
    if (recorded > 0)
      print(io.stdout, 'new observations were recorded; the running service acts on them (vend or refund), or does so when it next starts');
    if (failed > 0) print(io.stderr, 'some events could not be re-read from the provider (see the log above); run replay again later');
    return failed > 0 ? EXIT.FAILURE : EXIT.OK;
  } finally {
    close();
    db.close();
  }
}
