import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { postJson, startService } from '../../helpers/service.js';
import { mountPowerCutFs } from '../../helpers/power-cut-fs.js';
import { cleanup, stop } from '../../helpers/cleanup.js';

/**
 * The sale receipt's first register call is claimed in the vend's settle commit (synchronous=FULL),
 * not in a commit of its own. A real power cut (the database on a file system that loses every
 * write not yet synced) right after that claim, and right after the register committed: after the
 * restart the claim is still there, so the register is asked by key before any call, and it holds
 * exactly one receipt for the sale.
 */
describe('a power cut around the fiscal receipt claimed with the vend', () => {
  const defer = cleanup();

  const post = postJson;
  const query = (path: string, sql: string) => {
    const db = new Database(path, { readonly: true });
    try {
      return db.prepare(sql).all() as Record<string, unknown>[];
    } finally {
      db.close();
    }
  };

  it.each(['after_receipt_claim', 'after_receipt_call'])(
    'power cut %s: the claim survives, one receipt after the restart',
    async (point) => {
      const fs = defer(await mountPowerCutFs(), (mounted) => mounted.unmount());
      const dbPath = join(fs.path, 'vendgate.db');
      const svc = defer(
        await startService({
          config: { storage: { path: dbPath }, fiscal: { register: 'sandbox', lookupEveryMs: 200 } },
          env: { VENDGATE_CRASH_AT: point },
        }),
        stop,
      );
      const created = (await (await post(`${svc.localUrl}/api/orders`, { slot: 'A1' })).json()) as { invoiceId: string };
      await post(`${svc.localUrl}/sandbox/pay/${created.invoiceId}`).catch(() => null);
      expect((await svc.exited()).signal).toBe('SIGKILL');
      await fs.cut();
      // What the cut left: the vend settled and its receipt claimed for a call (never `queued`, which
      // would be sent again without asking the register).
      expect(query(dbPath, "SELECT state, attempts FROM receipts WHERE kind = 'sale'")).toEqual([{ state: 'sending', attempts: 1 }]);
      await svc.restart({ env: {} });
      await svc.waitFor(() => query(dbPath, "SELECT state FROM receipts WHERE kind = 'sale'")[0]?.state === 'issued', {
        timeoutMs: 30_000,
        what: 'the sale receipt to be issued',
      });
      expect(query(join(fs.path, 'fiscal-sandbox.db'), 'SELECT kind, count(*) AS n FROM sandbox_receipts GROUP BY kind')).toEqual([
        { kind: 'sale', n: 1 },
      ]);
      expect(svc.readSimLog()).toHaveLength(1);
    },
  );
});
