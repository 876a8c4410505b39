import { percentiles, postJson, row, sleep, waitFor } from './lib.mjs';
import { startGeregeStack } from './stack.mjs';

/**
 * What one device costs the provider, from the simulator's own request log: calls per paid order and
 * per expired order, requests per second while idle and while one invoice is open, and how soon the
 * poller stops reading an invoice once the webhook settled it.
 */
const kindOf = (r) => {
  if (r.path === '/oauth2/token') return 'token';
  if (r.method === 'POST' && r.path === '/payment-intents') return 'create';
  if (r.method === 'GET' && r.path.startsWith('/payment-intents/')) return 'get';
  if (r.path.endsWith('/cancel')) return 'cancel';
  if (r.path.startsWith('/events')) return 'events';
  return `${r.method} ${r.path}`;
};

function tally(requests) {
  const out = {};
  for (const r of requests) out[kindOf(r)] = (out[kindOf(r)] ?? 0) + 1;
  return out;
}

const orderState = async (stack, orderId) => (await fetch(`${stack.localUrl}/api/orders/${orderId}`).then((r) => r.json())).state;

export async function providerCallsBench({ log, quick }) {
  const intervalMs = 1_000;
  const windowMs = quick ? 4_000 : 10_000;
  const stack = await startGeregeStack({ webhooks: true, intervalMs, invoiceTtlSec: 30, seed: 103 });
  try {
    const requestsBetween = (from, to) => stack.sim.records().requests.filter((r) => r.at >= from && r.at < to);
    await sleep(2_000); // start-up reads (token, Events backfill) are not "idle"

    // Idle: nothing open, nothing to ask.
    let from = Date.now();
    await sleep(windowMs);
    const idle = requestsBetween(from, Date.now());
    const idlePerSec = idle.length / (windowMs / 1000);

    // One open invoice nobody pays: the poller's steady rate.
    const open = await postJson(`${stack.localUrl}/api/orders`, { slot: 'A1' });
    await sleep(intervalMs);
    from = Date.now();
    await sleep(windowMs);
    const openReads = requestsBetween(from, Date.now()).filter((r) => r.path === `/payment-intents/${open.body.invoiceId}`);
    const openPerSec = openReads.length / (windowMs / 1000);
    await postJson(`${stack.localUrl}/api/orders/${open.body.orderId}/cancel`);
    await sleep(3 * intervalMs);

    // Paid orders: everything from the create to well after the vend.
    const paidOrders = quick ? 5 : 20;
    const perPaid = [];
    const paidBreakdown = {};
    const stopAfterPaid = [];
    for (let i = 0; i < paidOrders; i += 1) {
      const start = Date.now();
      const created = await postJson(`${stack.localUrl}/api/orders`, { slot: 'A1' });
      await sleep(Math.floor(Math.random() * intervalMs));
      await stack.sim.pay(created.body.invoiceId);
      await waitFor(async () => (await orderState(stack, created.body.orderId)) === 'vended', { intervalMs: 20, what: 'vended' });
      await sleep(3 * intervalMs);
      const records = stack.sim.records();
      const window = records.requests.filter((r) => r.at >= start);
      perPaid.push(window.length);
      for (const [k, n] of Object.entries(tally(window))) paidBreakdown[k] = (paidBreakdown[k] ?? 0) + n;
      const paidAt = records.invoices.find((inv) => inv.id === created.body.invoiceId).paidAt;
      const lastRead = Math.max(...records.getCalls.filter((g) => g.id === created.body.invoiceId).map((g) => g.at));
      stopAfterPaid.push(Math.max(0, lastRead - paidAt));
    }
    log(`provider calls: ${paidOrders} paid orders measured`);

    // Expired orders: nobody pays until the invoice runs out (invoiceTtlSec 30).
    const expiredOrders = quick ? 1 : 2;
    const perExpired = [];
    const expiredBreakdown = {};
    for (let i = 0; i < expiredOrders; i += 1) {
      const start = Date.now();
      const created = await postJson(`${stack.localUrl}/api/orders`, { slot: 'A1' });
      await waitFor(async () => (await orderState(stack, created.body.orderId)) === 'expired', {
        intervalMs: 200,
        timeoutMs: 60_000,
        what: 'expired',
      });
      await sleep(5 * 3 * intervalMs);
      const window = stack.sim.records().requests.filter((r) => r.at >= start);
      perExpired.push(window.length);
      for (const [k, n] of Object.entries(tally(window))) expiredBreakdown[k] = (expiredBreakdown[k] ?? 0) + n;
      log(`provider calls: expired order ${i + 1} measured`);
    }
    const stop = percentiles(stopAfterPaid);
    const paidStats = percentiles(perPaid);
    return {
      name: 'provider-calls',
      settings: { pollIntervalMs: intervalMs, windowMs, invoiceTtlSec: 30 },
      results: {
        idle: { requests: idle.length, perSec: idlePerSec, kinds: tally(idle) },
        open: { reads: openReads.length, perSec: openPerSec },
        perPaid: paidStats,
        perExpired,
        expiredBreakdown,
        pollStopAfterPaidMs: stop,
        paidBreakdown,
      },
      rows: [
        row('provider requests/s, idle device', idlePerSec.toFixed(2), '0', idle.length === 0),
        row(
          `provider requests/s, one open invoice (poll.intervalMs ${intervalMs})`,
          openPerSec.toFixed(2),
          `≤ ${(1000 / intervalMs).toFixed(2)} (one GET per interval)`,
          openPerSec <= 1000 / intervalMs + 0.1,
        ),
        row(
          'provider calls per paid order (create … 3 intervals after the vend)',
          `${paidStats.p50} median, max ${paidStats.max} (${JSON.stringify(paidBreakdown)} in ${paidOrders})`,
          'informational',
          null,
        ),
        row(
          'provider calls per expired order (create … 15 intervals after expiry)',
          `${percentiles(perExpired).p50} (${JSON.stringify(expiredBreakdown)})`,
          'informational',
          null,
        ),
        row(
          'poller stops after the webhook settled the invoice: last GET − paid',
          `${stop.p50} / ${stop.max} ms (median / max)`,
          `≤ ${intervalMs} ms`,
          stop.max <= intervalMs,
        ),
      ],
    };
  } finally {
    await stack.stop();
  }
}
