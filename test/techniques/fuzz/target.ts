import Database from 'better-sqlite3';
import { join } from 'node:path';
import { expect } from 'vitest';
import { createApp } from '../../../src/app.js';
import type { Settings } from '../../../src/settings/index.js';
import type { Clock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/logger.js';

/** The running app both fuzz files aim their requests at. */
export interface FuzzTarget {
  localUrl: string;
  webhookUrl: string;
  /** Bumped by SQLite whenever another connection commits a change: "was anything written?" */
  versions(): string;
  /** `path` with `{order}` and `{invoice}` filled in from the newest order. */
  fill(path: string): string;
  stop(): Promise<void>;
}

/**
 * The app on `settings` (sandbox provider, sim actuator, real sockets), started with an order
 * waiting for payment, so `{order}` and `{invoice}` name real things from the start; both its
 * databases (the sandbox's in `dir`) are open read-only to tell whether a request wrote anything.
 */
export async function startFuzzTarget(settings: Settings, dir: string, clock: Clock): Promise<FuzzTarget> {
  const app = createApp(settings, { clock, logger: silentLogger() });
  const { localUrl } = await app.start();
  let vendgateDb: Database.Database | undefined;
  let sandboxDb: Database.Database | undefined;
  const stop = async () => {
    vendgateDb?.close();
    sandboxDb?.close();
    await app.stop();
  };
  try {
    const created = await fetch(`${localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"slot":"A1"}',
    });
    expect(created.status).toBe(201);
    vendgateDb = new Database(settings.storage.path, { readonly: true });
    sandboxDb = new Database(join(dir, 'sandbox.db'), { readonly: true });
  } catch (err) {
    await stop();
    throw err;
  }
  const local = vendgateDb;
  const sandbox = sandboxDb;
  return {
    localUrl,
    webhookUrl: app.context().webhooks.url()!,
    versions: () => `${local.pragma('data_version', { simple: true })}/${sandbox.pragma('data_version', { simple: true })}`,
    fill(path) {
      const order = local.prepare('SELECT id, invoice_id FROM orders ORDER BY id DESC LIMIT 1').get() as {
        id: number;
        invoice_id: string | null;
      };
      return path.replaceAll('{order}', String(order.id)).replaceAll('{invoice}', order.invoice_id ?? 'none');
    },
    stop,
  };
}
