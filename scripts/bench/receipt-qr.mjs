import { WEBKASSA_SIM_DEFAULTS } from '../../dist/simulator/index.js';
import { percentiles, postJson, row, sleep, waitFor } from './lib.mjs';
import { startGeregeStack } from './stack.mjs';

/**
 * The fiscal receipt's QR on the kiosk's result screen, beside the vend's own time: the real compiled
 * service with `fiscal.register: ebarimt`, then `webkassa`, each answering over HTTP from the
 * simulator (PosAPI 3.x and the Webkassa-like register, no faults). For every sale the bench reads
 * the kiosk's own state stream (`GET /api/events`, what the result screen renders) and takes:
 * paid (the simulator's record) → the order `vended` in a state event (the vend settled), and
 * settled → the first state event whose `receipt` is `issued` with its QR rendered (`receiptQrSvg`).
 */

/** The kiosk's SSE stream, parsed: calls `onState(state, at)` for each `state` event as it arrives. */
async function followStates(url, onState) {
  const controller = new AbortController();
  const response = await fetch(`${url}/api/events`, { signal: controller.signal });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const done = (async () => {
    try {
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) return;
        const at = Date.now();
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          if (block.includes('event: state') && data) onState(JSON.parse(data), at);
        }
      }
    } catch (err) {
      if (err.name !== 'AbortError') throw err;
    }
  })();
  return {
    async close() {
      controller.abort();
      await done;
    },
  };
}

/** lib.mjs's percentiles and the p95 the issue asks for. */
function withP95(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    ...percentiles(values),
    p95: sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil(0.95 * sorted.length) - 1)],
  };
}

const REGISTERS = {
  ebarimt: (simUrl) => ({
    config: {
      register: 'ebarimt',
      timeZone: 'Asia/Ulaanbaatar',
      ebarimt: { url: simUrl, merchantTin: '10000000001', posNo: '10020030', districtCode: '2501', cityTax: true },
    },
    env: {},
  }),
  webkassa: (simUrl) => ({
    config: {
      register: 'webkassa',
      timeZone: 'Asia/Almaty',
      webkassa: { url: simUrl, login: WEBKASSA_SIM_DEFAULTS.login, cashboxId: WEBKASSA_SIM_DEFAULTS.cashbox.uniqueNumber },
    },
    env: {
      VENDGATE_FISCAL_WEBKASSA_PASSWORD: WEBKASSA_SIM_DEFAULTS.password,
      VENDGATE_FISCAL_WEBKASSA_API_KEY: WEBKASSA_SIM_DEFAULTS.apiKey,
    },
  }),
};

async function measure({ register, sales, log }) {
  // The stack's simulator serves the registers beside the provider, at its own URL.
  const stack = await startGeregeStack({
    webhooks: true,
    intervalMs: 1_000,
    seed: 26,
    withSim: (sim) => {
      const chosen = REGISTERS[register](sim.url);
      return { extra: { fiscal: chosen.config }, env: chosen.env };
    },
  });
  const vendedAt = new Map();
  const qrAt = new Map();
  const stream = await followStates(stack.localUrl, (state, at) => {
    const id = state.order?.orderId;
    if (id === undefined || state.order.state !== 'vended') return;
    if (!vendedAt.has(id)) vendedAt.set(id, at);
    if (!qrAt.has(id) && state.receipt?.status === 'issued' && state.receiptQrSvg) qrAt.set(id, at);
  });
  try {
    const measured = [];
    for (let i = 0; i < sales + 3; i += 1) {
      const created = await postJson(`${stack.localUrl}/api/orders`, { slot: 'A1' });
      if (created.status !== 201) throw new Error(`create answered ${created.status} ${JSON.stringify(created.body)}`);
      await stack.sim.pay(created.body.invoiceId);
      const id = created.body.orderId;
      await waitFor(() => qrAt.has(id), { what: `order ${id}: the receipt's QR on the result screen`, timeoutMs: 30_000 });
      if (i >= 3) measured.push(created.body); // the first three warm the JIT, the caches and the register's session up
      await sleep(20);
    }
    const paidAt = new Map(stack.sim.records().invoices.map((inv) => [inv.id, inv.paidAt]));
    const vend = withP95(measured.map((o) => vendedAt.get(o.orderId) - paidAt.get(o.invoiceId)));
    const qr = withP95(measured.map((o) => qrAt.get(o.orderId) - vendedAt.get(o.orderId)));
    const total = withP95(measured.map((o) => qrAt.get(o.orderId) - paidAt.get(o.invoiceId)));
    log(`${register}: ${measured.length} sales measured`);
    return { vend, qr, total };
  } finally {
    await stream.close();
    await stack.stop();
  }
}

export async function receiptQrBench({ log, quick }) {
  const sales = quick ? 10 : 200;
  const results = {};
  for (const register of Object.keys(REGISTERS)) results[register] = await measure({ register, sales, log });
  const rows = [];
  for (const [register, r] of Object.entries(results)) {
    const name = register === 'ebarimt' ? 'eBarimt PosAPI (simulated, HTTP)' : 'Webkassa (simulated, HTTP)';
    rows.push(
      row(`${name}: vend settled → receipt QR on the result screen, p50 / p95`, `${r.qr.p50} / ${r.qr.p95} ms`, '', null),
      row(`${name}: the vend itself, paid → settled, p50 / p95`, `${r.vend.p50} / ${r.vend.p95} ms`, '', null),
    );
  }
  return { name: 'receipt-qr', settings: { sales, actuatorDurationMs: 0, webhooks: true }, results, rows };
}
