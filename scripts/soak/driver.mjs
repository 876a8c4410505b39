/**
 * The customers: one after another, as at a real machine. Each picks a slot through the local API
 * (`POST /api/orders`) and then, by a seeded draw, pays through the simulator, walks away (the next
 * order replaces theirs), cancels, lets the provider expire the QR, or pays while cancelling (the
 * device may cancel before it hears of the payment: that money must come back). Requests that meet a killed service are retried once it is back.
 */

export const FINAL_STATES = new Set(['vended', 'refunded', 'vend_uncertain', 'canceled', 'expired', 'failed']);

export const BEHAVIOURS = { pay: 72, walkAway: 8, cancel: 5, providerExpires: 5, payCancelRace: 10 };

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function call(url, init = {}) {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(init.timeoutMs ?? 15_000) });
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

export function createDriver({ localUrl, sim, random, stats, isStopping }) {
  /** Retries while the service is down (SIGKILLed and restarting); gives up after `deadlineMs`. */
  async function persist(what, work, deadlineMs = 60_000) {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      try {
        return await work();
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`${what}: ${err.message}`);
        stats.retriedRequests += 1;
        await sleep(50);
      }
    }
  }

  async function createOrder(slot) {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const res = await persist('create an order', () =>
        call(`${localUrl}/api/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ slot }),
        }),
      );
      if (res.status === 201) return res.body;
      if (Date.now() > deadline) throw new Error(`no order accepted for 90 s (last answer ${res.status} ${JSON.stringify(res.body)})`);
      const code = res.body?.error?.code;
      // Sold out or jammed: this slot is not for sale; the customer leaves (the next one picks again).
      if (code === 'VG_ERR_SOLD_OUT' || code === 'VG_ERR_SLOT_JAMMED') {
        stats.createFailed[code] = (stats.createFailed[code] ?? 0) + 1;
        return null;
      }
      // Busy (the previous order is still vending) or the provider marked unreachable: a customer waits.
      if (res.status === 409 || code === 'VG_ERR_PROVIDER_UNAVAILABLE' || code === 'VG_ERR_OUT_OF_SERVICE') {
        stats.createWaits[code ?? res.status] = (stats.createWaits[code ?? res.status] ?? 0) + 1;
        await sleep(res.status === 409 ? 20 : 250);
        continue;
      }
      // The provider refused or kept failing past the create deadline: the order failed, the customer leaves.
      stats.createFailed[code ?? res.status] = (stats.createFailed[code ?? res.status] ?? 0) + 1;
      return null;
    }
  }

  async function orderState(orderId) {
    const res = await persist('read an order', () => call(`${localUrl}/api/orders/${orderId}`));
    return res.body?.state ?? `http ${res.status}`;
  }

  /**
   * Until the order is final. A refund that stays unresolved is left to the drain (and the verdict):
   * the next customer does not wait behind it.
   */
  async function waitFinal(orderId, timeoutMs = 30_000, refundingMs = 5_000) {
    const deadline = Date.now() + timeoutMs;
    let refundingSince = null;
    for (;;) {
      const state = await orderState(orderId);
      if (FINAL_STATES.has(state)) return state;
      refundingSince = state === 'refunding' ? (refundingSince ?? Date.now()) : null;
      if (Date.now() > deadline || (refundingSince !== null && Date.now() - refundingSince > refundingMs) || isStopping()) {
        stats.slowOrders.push({ orderId, state });
        return state;
      }
      await sleep(25);
    }
  }

  const cancel = (orderId) =>
    persist('cancel', () =>
      call(`${localUrl}/api/orders/${orderId}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
    );
  const pay = (invoiceId) =>
    sim.pay(invoiceId).then(
      () => true,
      () => false,
    );

  return {
    createOrder,
    waitFinal,
    cancel,

    /** One customer. Returns what they did, for the run's counts. */
    async customer() {
      const behaviour = random.weighted(BEHAVIOURS);
      const slot = random.weighted({ A1: 45, A2: 35, B1: 20 });
      const payDelayMs = random.int(0, 30);
      const began = Date.now();
      const created = await createOrder(slot);
      stats.createMs.push(Date.now() - began);
      stats.behaviours[behaviour] = (stats.behaviours[behaviour] ?? 0) + 1;
      if (!created) return;
      const { orderId, invoiceId } = created;
      switch (behaviour) {
        case 'pay':
          await sleep(payDelayMs);
          if (await pay(invoiceId)) stats.payments += 1;
          break;
        case 'walkAway':
          return;
        case 'cancel':
          await cancel(orderId);
          break;
        case 'providerExpires':
          sim.expire(invoiceId);
          break;
        case 'payCancelRace': {
          const [paid] = await Promise.all([sleep(payDelayMs).then(() => pay(invoiceId)), cancel(orderId)]);
          if (paid) stats.payments += 1;
          break;
        }
      }
      const state = await waitFinal(orderId);
      stats.finalStates[state] = (stats.finalStates[state] ?? 0) + 1;
      stats.orderMs.push(Date.now() - began);
    },
  };
}
