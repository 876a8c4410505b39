import { followSimLog, percentiles, postJson, row, sleep, waitFor } from './lib.mjs';
import { startGeregeStack } from './stack.mjs';

/**
 * Payment → vend for each national rail beside Gerege, in the same run and on the same machine: the
 * real service against each provider's simulator, the customer paying at a random moment within a
 * poll interval. QPay's callback is an unsigned hint, so its "webhook on" path costs one more read
 * (invoice + payment/check) than Gerege's signed event; the figures say how much. Kaspi QR has no
 * webhooks at all: its payment is found by polling through the fleet relay's Kaspi caller (device →
 * relay → Kaspi), so its figure is bounded by the poll interval, not by a callback.
 */
const PROVIDERS = ['gerege', 'qpay', 'kaspi'];

async function measure({ provider, orders, intervalMs, log }) {
  const stack = await startGeregeStack({ provider, webhooks: true, intervalMs, seed: 201 });
  try {
    const newLines = followSimLog(stack.simLogPath);
    const seen = new Map();
    const paid = [];
    for (let i = 0; i < orders + 3; i += 1) {
      const created = await postJson(`${stack.localUrl}/api/orders`, { slot: 'A1' });
      if (created.status !== 201) throw new Error(`${provider}: create answered ${created.status} ${JSON.stringify(created.body)}`);
      await sleep(Math.floor(Math.random() * intervalMs));
      await stack.sim.pay(created.body.invoiceId);
      if (i >= 3) paid.push(created.body); // the first three warm the JIT and the caches up
      await waitFor(
        () => {
          for (const line of newLines()) seen.set(line.orderId, Date.parse(line.at));
          return seen.has(created.body.orderId);
        },
        { what: `${provider} order ${created.body.orderId} to be actuated`, timeoutMs: intervalMs * 5 + 10_000 },
      );
      await waitFor(
        async () => (await fetch(`${stack.localUrl}/api/orders/${created.body.orderId}`).then((r) => r.json())).state === 'vended',
        { intervalMs: 10, what: 'vended' },
      );
    }
    const paidAt = new Map(stack.sim.records().invoices.map((inv) => [inv.id, inv.paidAt]));
    log(`${provider}: ${orders} orders measured`);
    return percentiles(paid.map((o) => seen.get(o.orderId) - paidAt.get(o.invoiceId)));
  } finally {
    await stack.stop();
  }
}

export async function railsBench({ log, quick }) {
  const intervalMs = 1_000;
  const results = {};
  for (const provider of PROVIDERS) results[provider] = await measure({ provider, orders: quick ? 10 : 100, intervalMs, log });
  return {
    name: 'rails',
    settings: { pollIntervalMs: intervalMs, actuatorDurationMs: 0, providers: PROVIDERS },
    results,
    rows: PROVIDERS.map((provider) =>
      provider === 'kaspi'
        ? row(
            'paid → actuation, kaspi through the relay, polled: p50 / p99',
            `${results[provider].p50} / ${results[provider].p99} ms`,
            `p99 ≤ poll interval (${intervalMs} ms) + 200 ms`,
            results[provider].p99 <= intervalMs + 200,
          )
        : row(
            `paid → actuation, ${provider}, callback on: p50 / p99`,
            `${results[provider].p50} / ${results[provider].p99} ms`,
            'p99 ≤ 50 ms',
            results[provider].p99 <= 50,
          ),
    ),
  };
}
