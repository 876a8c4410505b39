/**
 * The sandbox provider (the demo's) built as app.ts builds it — its own SQLite file beside the
 * gateway's database, the pay URL on the local listener, the first webhook secret — with the
 * provider's side read from that file: the sandbox has no simulator, it is its own provider.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { createManualClock, silentLogger } from '../../../src/util/index.js';
import { createSandboxProvider, sandboxDbPath } from '../../../src/payments/sandbox/index.js';
import { tempDir } from '../../helpers/temp.js';
import { WEBHOOK_SECRET, type CapturedWebhook, type ContractHarness } from './provider-harness.js';

/** Where app.ts points the sandbox's pay URLs: the kiosk's local listener (`/sandbox/pay/<id>`). */
const LOCAL_LISTENER = 'http://127.0.0.1:8080';

export async function startSandboxHarness(options: { webhooks?: boolean } = {}): Promise<ContractHarness> {
  const dir = tempDir('vendgate-sandbox-contract-');
  const clock = createManualClock();
  const dbPath = sandboxDbPath(join(dir.path, 'vendgate.db'));
  const sandbox = createSandboxProvider(
    { clock, logger: silentLogger() },
    { dbPath, payUrl: (id) => `${LOCAL_LISTENER}/sandbox/pay/${id}`, webhookSecret: WEBHOOK_SECRET },
  );
  const webhooks: CapturedWebhook[] = [];
  // In the app each delivery is POSTed to the gateway's own webhook listener; here it is kept as sent.
  if (options.webhooks) sandbox.onDelivery(({ rawBody, headers }) => webhooks.push({ rawBody, headers }));
  // The file the sandbox keeps is the provider's truth; it exists once the provider has opened it.
  await sandbox.provider.checkCredentials();
  const file = new Database(dbPath);
  const rows = <T>(sql: string) => file.prepare(sql).all() as T[];

  return {
    provider: sandbox.provider,
    clock,
    webhooks,
    invoices: () =>
      rows<{ id: string; idempotencyKey: string }>('SELECT id, idempotency_key AS idempotencyKey FROM sandbox_invoices ORDER BY rowid'),
    events: () => rows<{ body: string }>('SELECT body FROM sandbox_events ORDER BY seq').map((r) => JSON.parse(r.body) as unknown),
    refundsMade: () =>
      rows<{ type: string }>("SELECT json_extract(body, '$.type') AS type FROM sandbox_events").filter((r) => r.type === 'invoice.refunded')
        .length,
    async pay(invoiceId, payOptions = {}) {
      if (payOptions.amount !== undefined) throw new Error('the sandbox pay page pays the invoice amount only');
      await sandbox.payments.pay(invoiceId);
    },
    // The sandbox expires an invoice by its clock, when it is next read; this one's time is up now.
    expire(invoiceId) {
      file.prepare('UPDATE sandbox_invoices SET expires_at = ? WHERE id = ?').run(clock.now(), invoiceId);
    },
    // Deliveries are synchronous calls from the status change: none is ever in flight.
    deliveriesIdle: async () => {},
    async stop() {
      file.close();
      sandbox.close();
      dir.cleanup();
    },
  };
}
