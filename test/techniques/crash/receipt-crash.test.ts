import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { postJson, startService } from '../../helpers/service.js';
import { cleanup, stop } from '../../helpers/cleanup.js';

/**
 * The real service SIGKILLs itself between the durable claim of a receipt and the register's
 * answer (before the call, and after the register committed). After the restart: the receipt is
 * asked for by key and ends issued, and the register holds exactly one receipt for the sale.
 */
describe('crash around a fiscal receipt call', () => {
  const defer = cleanup();
  const post = postJson;

  it.each(['after_receipt_claim', 'after_receipt_call'])('SIGKILL %s: one receipt after the restart', async (point) => {
    const svc = defer(
      await startService({ config: { fiscal: { register: 'sandbox', lookupEveryMs: 200 } }, env: { VENDGATE_CRASH_AT: point } }),
      stop,
    );
    const created = (await (await post(`${svc.localUrl}/api/orders`, { slot: 'A1' })).json()) as { invoiceId: string };
    await post(`${svc.localUrl}/sandbox/pay/${created.invoiceId}`).catch(() => null);
    expect((await svc.exited()).signal).toBe('SIGKILL');
    await svc.restart({ env: {} });
    await svc.waitFor(
      () => {
        const db = new Database(svc.dbPath, { readonly: true });
        try {
          return (db.prepare("SELECT state FROM receipts WHERE kind = 'sale'").get() as { state: string } | undefined)?.state === 'issued';
        } finally {
          db.close();
        }
      },
      { what: 'the sale receipt to be issued' },
    );
    const register = new Database(join(svc.dir, 'fiscal-sandbox.db'), { readonly: true });
    expect(register.prepare('SELECT kind, count(*) AS n FROM sandbox_receipts GROUP BY kind').all()).toEqual([{ kind: 'sale', n: 1 }]);
    register.close();
    expect(svc.readSimLog()).toHaveLength(1);
  });
});
