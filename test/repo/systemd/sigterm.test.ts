import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/index.js';
import { paidOrder, startService, type Service } from '../../helpers/service.js';

// Long enough that a test process descheduled on a loaded machine still sees the vend in progress.
const VEND_MS = 4_000;

function query<T>(dbPath: string, sql: string, ...params: unknown[]): T | undefined {
  const db = openDatabase(dbPath, { readonly: true });
  try {
    return db.prepare(sql).get(...params) as T | undefined;
  } finally {
    db.close();
  }
}

/** A paid order for `slot`, its vend firing (the sim machine busy for VEND_MS) when this resolves. */
async function vendFiring(svc: Service, slot: string): Promise<{ orderId: number }> {
  const order = await paidOrder(svc.localUrl, slot);
  await svc.waitFor(
    () => query<{ state: string }>(svc.dbPath, 'SELECT state FROM vend_jobs WHERE order_id = ?', order.orderId)?.state === 'firing',
    { timeoutMs: 5_000, what: 'the vend to be firing' },
  );
  return order;
}

describe('systemctl stop (SIGTERM) during a vend', () => {
  it('stops taking orders at once, finishes the vend in progress, settles it, and exits 0', async () => {
    const svc = await startService({ config: { actuator: { sim: { durationMs: VEND_MS } } } });
    try {
      const order = await vendFiring(svc, 'A1');

      const signalledAt = Date.now();
      const exit = svc.kill('SIGTERM');

      // No new customer is taken while the machine is still busy with the last one.
      await svc.waitFor(
        async () => {
          try {
            await fetch(`${svc.localUrl}/api/state`, { signal: AbortSignal.timeout(200) });
            return false;
          } catch {
            return true;
          }
        },
        { timeoutMs: VEND_MS, what: 'the local listener to close' },
      );
      const closedAt = Date.now();
      expect(svc.readSimLog()).toEqual([]);

      expect(await exit).toEqual({ code: 0, signal: null });
      const actuations = svc.readSimLog();
      expect(actuations).toHaveLength(1);
      expect(actuations[0]).toMatchObject({ orderId: order.orderId, slot: 'A1' });
      expect(Date.parse(String(actuations[0]!.at))).toBeGreaterThan(closedAt);
      expect(closedAt - signalledAt).toBeLessThan(VEND_MS);
      expect(query<{ state: string }>(svc.dbPath, 'SELECT state FROM orders WHERE id = ?', order.orderId)?.state).toBe('vended');
      expect(
        query<{ state: string; outcome: string }>(svc.dbPath, 'SELECT state, outcome FROM vend_jobs WHERE order_id = ?', order.orderId),
      ).toEqual({ state: 'done', outcome: 'vended' });

      const messages = svc.logs().map((line) => line.msg);
      expect(messages.indexOf('stop requested')).toBeGreaterThan(-1);
      expect(messages.at(-1)).toBe('stopped');
    } finally {
      await svc.stop();
    }
  });

  it('a restart after that stop finds nothing to recover: no uncertain vend, no second actuation', async () => {
    const svc = await startService({ config: { actuator: { sim: { durationMs: VEND_MS } } } });
    try {
      await vendFiring(svc, 'A2');
      expect(await svc.kill('SIGTERM')).toEqual({ code: 0, signal: null });
      await svc.restart();

      expect(svc.logs().some((line) => line.msg === 'recovered from an interrupted run')).toBe(false);
      expect(query<{ n: number }>(svc.dbPath, "SELECT count(*) AS n FROM orders WHERE state = 'vend_uncertain'")?.n).toBe(0);
      expect(svc.readSimLog()).toHaveLength(1);
    } finally {
      await svc.stop();
    }
  });
});
