import { afterEach, describe, expect, it } from 'vitest';
import { startService, type Service } from '../helpers/service.js';
import { readRows } from '../helpers/database.js';

let svc: Service | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
});

const rows = (s: Service, sql: string, ...params: unknown[]) => readRows(s.dbPath, sql, ...params);

describe('the embedded demo (sandbox provider)', () => {
  it('delivers its signed webhooks to the service’s own listener, so a demo payment goes through both channels', async () => {
    const s = (svc = await startService());
    const created = (await fetch(`${s.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"slot":"A2"}',
    }).then((r) => r.json())) as { orderId: number; invoiceId: string };
    expect((await fetch(`${s.localUrl}/sandbox/pay/${created.invoiceId}`, { method: 'POST' })).status).toBe(204);
    await s.waitFor(() => s.readSimLog().length === 1, { what: 'the vend' });

    const events = await s.waitFor(
      () => {
        const found = rows(
          s,
          'SELECT type, source, processed_at FROM webhook_events WHERE object_id = ? AND processed_at IS NOT NULL',
          created.invoiceId,
        );
        return found.length > 0 ? found : null;
      },
      { timeoutMs: 10_000, what: 'the processed webhook' },
    );
    expect(events).toEqual([expect.objectContaining({ type: 'invoice.paid', source: 'webhook' })]);
    // The row can be read before the service's log line has come through its stdout pipe: wait for it.
    const accepted = await s.waitFor(() => s.logs().find((l) => l.msg === 'webhook accepted'), { what: 'the "webhook accepted" log line' });
    expect(accepted).toMatchObject({ secretIndex: 0, type: 'invoice.paid' });
    expect(s.logs().find((l) => l.msg === 'vendgate ready')?.webhookUrl).toBe(s.webhookUrl);
    expect((await fetch(`${s.webhookUrl}/webhooks/health`)).status).toBe(200);
    // The tunnel port serves nothing of the local API.
    expect((await fetch(`${s.webhookUrl}/api/state`)).status).toBe(404);
  });
});
