import { afterEach, describe, expect, it } from 'vitest';
import { connect } from 'mqtt';
import { sandboxOrder, startService, type Service } from '../helpers/service.js';
import { testBroker } from '../helpers/broker.js';
import { waitFor } from '../helpers/wait.js';
import { samples } from './exposition.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function sale(svc: Service, slot: string): Promise<number> {
  const created = await sandboxOrder(svc, slot);
  expect((await fetch(created.payUrl, { method: 'POST' })).status).toBe(204);
  return created.orderId;
}

async function orderState(svc: Service, id: number): Promise<string> {
  return ((await (await fetch(`${svc.localUrl}/api/orders/${id}`)).json()) as { state: string }).state;
}

describe('sales figures for the operator', () => {
  it('paid, vended and refunded sales, counted and summed from the orders, today and in total, in /metrics and MQTT telemetry', async () => {
    const broker = await testBroker();
    cleanups.push(() => broker.close());
    const deviceId = `sales-${Math.random().toString(16).slice(2, 10)}`;
    const svc = await startService({
      config: {
        device: { id: deviceId },
        mqtt: { url: broker.url, telemetryIntervalSec: 5 },
        // A2's motor is jammed: its paid sale is refunded by the device itself.
        actuator: { kind: 'sim', sim: { jamSlots: ['A2'] } },
      },
    });
    cleanups.push(() => svc.stop());

    const telemetry: Record<string, any>[] = [];
    const watcher = connect(broker.url, { protocolVersion: 4, reconnectPeriod: 0 });
    cleanups.push(() => watcher.end(true));
    watcher.on('connect', () => watcher.subscribe(`vendgate/${deviceId}/telemetry`));
    watcher.on('message', (_topic, payload) => telemetry.push(JSON.parse(payload.toString())));

    for (const slot of ['A1', 'A1']) {
      const id = await sale(svc, slot);
      await waitFor(async () => (await orderState(svc, id)) === 'vended', { what: `order ${id} vended` });
    }
    const jammed = await sale(svc, 'A2');
    await waitFor(async () => (await orderState(svc, jammed)) === 'refunded', { timeoutMs: 60_000, what: 'the jammed sale refunded' });

    const text = await (await fetch(`${svc.localUrl}/metrics`)).text();
    const s = samples(text);
    expect(text).toContain('# TYPE vendgate_sales_total counter');
    expect(text).toContain('# TYPE vendgate_sales_amount_total counter');
    expect(text).toContain('# TYPE vendgate_sales_today gauge');
    const expected = { paid: [3, 5500], vended: [2, 3000], refunded: [1, 2500] } as const;
    for (const [state, [count, amount]] of Object.entries(expected)) {
      expect(s.get(`vendgate_sales_total{state="${state}"}`), state).toBe(count);
      expect(s.get(`vendgate_sales_amount_total{state="${state}",currency="MNT"}`), state).toBe(amount);
      expect(s.get(`vendgate_sales_today{state="${state}"}`), state).toBe(count);
      expect(s.get(`vendgate_sales_today_amount{state="${state}",currency="MNT"}`), state).toBe(amount);
    }

    const last = await waitFor(() => telemetry.findLast((t) => t.sales?.total?.refunded?.count === 1), {
      what: 'telemetry with the refund',
    });
    expect(last.sales).toMatchObject({
      currency: 'MNT',
      today: { paid: { count: 3, amount: 5500 }, vended: { count: 2, amount: 3000 }, refunded: { count: 1, amount: 2500 } },
      total: { paid: { count: 3, amount: 5500 }, vended: { count: 2, amount: 3000 }, refunded: { count: 1, amount: 2500 } },
    });
  });
});
