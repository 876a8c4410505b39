import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startGeregeStack, type GeregeStack } from '../chaos/stack.js';
import { mountPowerCutFs } from '../../helpers/power-cut-fs.js';
import { cleanup, stop } from '../../helpers/cleanup.js';
import { waitFor } from '../../helpers/wait.js';
import { execFile } from 'node:child_process';
import { readDex } from '../../dex/dex-reader.js';

/**
 * The audit across real power cuts in the middle of a sale: the real service against the Gerege
 * simulator, its database (and the audit's side mark beside it) on a file system that loses every
 * write not yet synced (power-cut-fs.c); the power goes while the motor turns, three times. After
 * each restart the audit read (`vendgate dex`, read with the tests' own DEX reader) holds exactly
 * the delivered sales of the ledger, "since init" never went backwards, and no read is refused as
 * behind its own last read. The uncertain vend a cut leaves is settled by a person, and counts then.
 */

const defer = cleanup();

function delivered(db: string): { count: number; value: number } {
  const conn = new Database(db, { readonly: true });
  try {
    return conn
      .prepare(
        `SELECT count(*) AS count, coalesce(sum(amount), 0) AS value FROM orders o
          WHERE EXISTS (SELECT 1 FROM order_history h WHERE h.order_id = o.id AND h.to_state = 'vended')`,
      )
      .get() as { count: number; value: number };
  } finally {
    conn.close();
  }
}

const MAIN = new URL('../../../dist/main.js', import.meta.url).pathname;

/** `vendgate <args>` on the service's config, as a technician runs it beside the service (with its secrets). */
function cli(s: GeregeStack, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const info = s.sim.info();
  const env = { ...process.env, VENDGATE_PROVIDER_CLIENT_SECRET: info.clientSecret!, VENDGATE_WEBHOOK_SECRETS: info.webhookSecret };
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args, '--config', s.svc.configPath], { encoding: 'utf8', env }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

async function pay(s: GeregeStack, invoiceId: string): Promise<void> {
  const answer = await fetch(`${s.sim.url}/__sim/pay/${invoiceId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  expect(answer.status).toBeLessThan(300);
}

describe('the audit across power cuts mid-sale', () => {
  it('cut while the motor turns, three times: every read equals the delivered sales and since init never goes back', async () => {
    const fs = defer(await mountPowerCutFs(), (mounted) => mounted.unmount());
    const db = join(fs.path, 'vendgate.db');
    const s = defer(
      await startGeregeStack({
        readyTimeoutMs: 60_000,
        // A slow motor, and one vend in four fails (a jam): the cut lands mid-actuation.
        config: {
          device: { id: `dexcut-${process.pid}` },
          storage: { path: db },
          actuator: { sim: { durationMs: 1_500, failMode: 'fail', failRate: 0.25, failSeed: 7 } },
        },
      }),
      stop,
    );
    let last = { count: 0, value: 0, read: 0 };
    const read = async () => {
      const taken = await cli(s, ['dex']);
      expect(taken.code, taken.stderr).toBe(0);
      const dex = readDex(taken.stdout);
      expect(dex.problems).toEqual([]);
      const [value, count] = dex.one('VA1').slice(1).map(Number) as [number, number];
      const reads = Number(dex.one('EA3')[1]);
      expect(count).toBeGreaterThanOrEqual(last.count);
      expect(value).toBeGreaterThanOrEqual(last.value);
      expect(reads).toBe(last.read + 1);
      expect({ count, value }).toEqual(delivered(db));
      last = { count, value, read: reads };
    };
    const sale = async (slot: string) => {
      const created = await s.call('POST', '/api/orders', { slot });
      expect(created.status).toBe(201);
      await pay(s, created.json.invoiceId);
      return created.json.orderId as number;
    };

    for (let round = 0; round < 3; round += 1) {
      for (const slot of ['A1', 'A2', 'A1']) await s.waitSettled(await sale(slot), 60_000);
      await read();
      // The power goes while the motor turns.
      const cut = await sale(round % 2 === 0 ? 'A1' : 'A2');
      await waitFor(async () => (await s.order(cut))?.state === 'vending', { timeoutMs: 30_000, what: 'the vend to start' });
      await s.svc.kill('SIGKILL');
      await fs.cut();
      await s.svc.restart();
      // Nobody knows whether the item fell: nothing counts until a person says.
      const after = await s.waitSettled(cut, 60_000);
      expect(after.state).toBe('vend_uncertain');
      await read();
      const resolved = await cli(s, ['resolve', String(cut), round === 1 ? '--not-vended' : '--vended']);
      expect(resolved.code, resolved.stderr).toBe(0);
      await read();
    }
    // Two of the three uncertain vends were delivered; failed vends never count.
    expect(last.count).toBe(delivered(db).count);
    expect(last.count).toBeGreaterThan(0);
  }, 600_000);
});
