import { describe, expect, it } from 'vitest';
import { cleanup, stop } from '../helpers/cleanup.js';
import { waitFor } from '../helpers/wait.js';
import { startProviderStack } from '../techniques/chaos/stack.js';

/**
 * Kaspi QR through the fleet relay, black-box: the real service polls a QR through the relay's
 * Kaspi caller (in this process) in front of the Kaspi simulator. The relay down is no new Kaspi
 * order, with a clear answer, and never a lost payment: a QR paid while the relay was away is read
 * when it is back and vended once; nothing is cancelled or returned on a guess meanwhile.
 */
const defer = cleanup();

describe('Kaspi QR with the relay down', () => {
  it('refuses new orders clearly, keeps an open QR, and vends it once when the relay is back; no cancel or return is sent', async () => {
    const s = defer(
      await startProviderStack({
        provider: 'kaspi',
        outage: true,
        config: { device: { id: 'kaspi-outage' }, poll: { intervalMs: 200 }, provider: { invoiceTtlSec: 120 } },
      }),
      stop,
    );
    const created = await s.call('POST', '/api/orders', { slot: 'A1' });
    expect(created.status).toBe(201);
    const invoiceId = created.json.invoiceId as string;
    expect(invoiceId).toMatch(/^\d+$/);

    await s.proxy!.cut();
    // The customer pays while the device cannot reach the relay.
    await s.sim.pay(invoiceId);
    const refused = await waitFor(
      async () => {
        const answer = await s.call('POST', '/api/orders', { slot: 'A2' });
        return answer.status !== 201 ? answer : null;
      },
      { timeoutMs: 30_000, what: 'an order refused while the relay is down' },
    );
    expect(refused.status).toBe(503);
    expect(refused.json.error.code).toBe('VG_ERR_PROVIDER_UNAVAILABLE');
    expect(refused.json.error.message).toMatch(/not reachable/);
    // Reads fail meanwhile; the order waits, it is neither vended nor closed on a guess.
    expect((await s.order(created.json.orderId as number))?.state).toBe('awaiting_payment');

    await s.proxy!.restore();
    const settled = await s.waitSettled(created.json.orderId as number, 60_000);
    expect(settled.state).toBe('vended');
    expect(s.actuationsByOrder().get(created.json.orderId as number)).toBe(1);
    const kaspiCalls = s.sim.records().requests.map((r) => r.path);
    expect(kaspiCalls.filter((p) => p.endsWith('/remote/cancel') || p.endsWith('/payment/return'))).toEqual([]);
    expect(s.query('SELECT count(*) AS n FROM refunds')[0]!.n).toBe(0);
  });
});
