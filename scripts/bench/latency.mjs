import { followSimLog, percentiles, postJson, row, sleep, waitFor } from './lib.mjs';
import { startGeregeStack } from './stack.mjs';

/**
 * Paid → actuation: from the simulator's "paid" moment (its record of the intent) to the `at` of the
 * sim actuator's line, with the webhook channel on and with the poller alone. Each payment comes at a
 * random moment within a poll interval, as customers do.
 */
async function measure({ webhooks, orders, intervalMs, log }) {
  const stack = await startGeregeStack({ webhooks, intervalMs, seed: webhooks ? 101 : 102 });
  try {
    const newLines = followSimLog(stack.simLogPath);
    const seen = new Map();
    const paid = [];
    for (let i = 0; i < orders + 3; i += 1) {
      const created = await postJson(`${stack.localUrl}/api/orders`, { slot: 'A1' });
      if (created.status !== 201) throw new Error(`create answered ${created.status} ${JSON.stringify(created.body)}`);
      await sleep(Math.floor(Math.random() * intervalMs));
      await stack.sim.pay(created.body.invoiceId);
      if (i >= 3) paid.push(created.body); // the first three warm the JIT and the caches up
      await waitFor(
        () => {
          for (const line of newLines()) seen.set(line.orderId, Date.parse(line.at));
          return seen.has(created.body.orderId);
        },
        { what: `order ${created.body.orderId} to be actuated`, timeoutMs: intervalMs * 5 + 10_000 },
      );
      await waitFor(
        async () => (await fetch(`${stack.localUrl}/api/orders/${created.body.orderId}`).then((r) => r.json())).state === 'vended',
        { intervalMs: 10, what: 'vended' },
      );
    }
    const paidAt = new Map(stack.sim.records().invoices.map((inv) => [inv.id, inv.paidAt]));
    const latencies = paid.map((o) => seen.get(o.orderId) - paidAt.get(o.invoiceId));
    log(`${webhooks ? 'webhook on' : 'poll only'}: ${orders} orders measured`);
    return percentiles(latencies);
  } finally {
    await stack.stop();
  }
}

export async function latencyBench({ log, quick }) {
  const intervalMs = 1_000;
  const webhook = await measure({ webhooks: true, orders: quick ? 30 : 200, intervalMs, log });
  const poll = await measure({ webhooks: false, orders: quick ? 15 : 60, intervalMs, log });
  const pollTarget = intervalMs + 100;
  return {
    name: 'latency',
    settings: { pollIntervalMs: intervalMs, actuatorDurationMs: 0 },
    results: { webhook, poll },
    rows: [
      row('paid → actuation, webhook on: p50 / p99', `${webhook.p50} / ${webhook.p99} ms`, 'p99 ≤ 50 ms', webhook.p99 <= 50),
      row(
        `paid → actuation, poll only (poll.intervalMs ${intervalMs}): p50 / p99`,
        `${poll.p50} / ${poll.p99} ms`,
        `p99 ≤ ${pollTarget} ms`,
        poll.p99 <= pollTarget,
      ),
    ],
  };
}
