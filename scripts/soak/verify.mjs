import Database from 'better-sqlite3';
import { existsSync, readFileSync } from 'node:fs';

/**
 * The verdict of a soak run, computed from four independent witnesses: the device's database, the
 * provider simulator's records (what really happened to the money), the sim actuator's log (what
 * really came out of the machine) and the MQTT broker's record (what operators saw).
 */

const SETTLED = new Set(['vended', 'refunded', 'vend_uncertain']);

export function readSimLog(path) {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

/** A refund parked for a person: unknown outcome, alarm raised. Never expected; counted on its own row. */
export const REFUND_PARKED_SQL =
  "SELECT 1 FROM refunds r JOIN alarms a ON a.name = 'refund_unknown/' || r.order_id WHERE r.order_id = ? AND r.state = 'unknown'";

export function verify({ dbPath, simLogPath, records, received, deviceId, prefix, kills, mqttEnabled }) {
  const db = new Database(dbPath, { readonly: true });
  try {
    const orders = db.prepare('SELECT id, reference, state, invoice_id, paid_at FROM orders').all();
    const byReference = new Map(orders.map((o) => [o.reference, o]));
    const byId = new Map(orders.map((o) => [o.id, o]));
    const alarms = new Set(db.prepare('SELECT name FROM alarms').pluck().all());
    const actuations = readSimLog(simLogPath);
    const violations = [];
    const count = (state) => orders.filter((o) => o.state === state).length;

    // The provider's truth: invoices of this device that took money, and money that went back.
    const invoices = records.invoices.filter((i) => byReference.has(i.reference));
    const paidInvoices = invoices.filter((i) => i.paidAt !== undefined);
    const refundedInvoiceIds = new Set(records.refunds.filter((r) => r.status === 'succeeded').map((r) => r.invoiceId));

    // One vend per order; no vend without a payment at the provider; goods xor money back.
    const fired = new Map();
    for (const a of actuations) fired.set(a.orderId, (fired.get(a.orderId) ?? 0) + 1);
    const doubleVends = [...fired.values()].filter((n) => n > 1).length;
    if (doubleVends > 0) violations.push(`${doubleVends} orders actuated more than once`);
    const paidIds = new Set(paidInvoices.map((i) => i.id));
    for (const orderId of fired.keys()) {
      const order = byId.get(orderId);
      if (!order || !paidIds.has(order.invoice_id)) violations.push(`order ${orderId} actuated without a payment at the provider`);
      if (order?.state === 'refunded') violations.push(`order ${orderId} delivered and refunded`);
    }
    for (const o of orders) {
      if (o.state === 'vended' && !fired.has(o.id)) violations.push(`order ${o.id} vended but nothing came out of the machine`);
      if (o.state === 'refunded' && !refundedInvoiceIds.has(o.invoice_id))
        violations.push(`order ${o.id} refunded here but not at the provider`);
      if (o.state === 'vend_uncertain' && !alarms.has(`vend_uncertain/${o.id}`))
        violations.push(`order ${o.id} uncertain without its alarm`);
    }

    // No lost payment: every paid invoice ended in goods, money back, or a person's alarm.
    const unsettled = new Set();
    for (const o of orders) if (o.paid_at !== null && !SETTLED.has(o.state)) unsettled.add(o.id);
    for (const invoice of paidInvoices) {
      const order = byReference.get(invoice.reference);
      const kept = order.invoice_id === invoice.id && SETTLED.has(order.state);
      if (!kept && !refundedInvoiceIds.has(invoice.id)) unsettled.add(order.id);
    }
    // A refund whose outcome stayed unknown long enough to alarm: money not back without a person.
    const parked = db.prepare(REFUND_PARKED_SQL);
    const refundsLeftToPerson = [...unsettled].filter((id) => byId.get(id).state === 'refunding' && parked.get(id));
    for (const id of refundsLeftToPerson) unsettled.delete(id);
    if (refundsLeftToPerson.length > 0) {
      violations.push(
        `${refundsLeftToPerson.length} refunds left to a person (unknown outcome, refund_unknown alarm): orders ${refundsLeftToPerson.slice(0, 10).join(', ')}`,
      );
    }
    if (unsettled.size > 0) {
      const refundOf = db.prepare('SELECT state, last_error FROM refunds WHERE order_id = ?');
      const detail = [...unsettled].slice(0, 10).map((id) => {
        const refund = refundOf.get(id);
        return `${id} (${byId.get(id).state}${refund ? `, refund ${refund.state}: ${refund.last_error ?? ''}` : ''})`;
      });
      violations.push(`${unsettled.size} paid orders not settled: ${detail.join('; ')}`);
    }

    // Uncertainty only where a kill landed while the machine was moving.
    const uncertain = count('vend_uncertain');
    const killsWhileFiring = kills.filter((k) => k.firingOrderId !== null).length;
    if (uncertain > killsWhileFiring)
      violations.push(`${uncertain} uncertain vends but only ${killsWhileFiring} kills landed while firing`);

    // One invoice per order attempt (every order here has one attempt).
    const perReference = new Map();
    for (const i of invoices) perReference.set(i.reference, (perReference.get(i.reference) ?? 0) + 1);
    const ordersWithInvoice = perReference.size;
    const extraInvoices = [...perReference.values()].reduce((sum, n) => sum + (n - 1), 0);
    if (extraInvoices > 0) violations.push(`${extraInvoices} extra invoices (more than one per order attempt)`);
    const keyInvoices = new Map();
    for (const call of records.createCalls) {
      if (!call.invoiceId || !call.idempotencyKey) continue;
      const set = keyInvoices.get(call.idempotencyKey) ?? new Set();
      set.add(call.invoiceId);
      keyInvoices.set(call.idempotencyKey, set);
    }
    const conflictingKeys = [...keyInvoices.values()].filter((s) => s.size > 1).length;
    if (conflictingKeys > 0) violations.push(`${conflictingKeys} idempotency keys gave more than one invoice`);

    // MQTT: every committed event reached the broker; no id names two different events.
    let mqtt = { expected: 0, delivered: 0, missing: 0, conflicting: 0, redeliveries: 0, unknown: 0, outboxLeft: 0 };
    const outboxLeft = db.prepare('SELECT count(*) FROM outbox').pluck().get();
    if (mqttEnabled) {
      const expected = new Map(
        db
          .prepare("SELECT id, seq FROM soak_outbox_log WHERE kind = 'event'")
          .all()
          .map((r) => [r.id, r.seq]),
      );
      const topic = `${prefix}/${deviceId}/events`;
      const seen = new Map();
      let copies = 0;
      for (const message of received) {
        if (message.topic !== topic) continue;
        let body;
        try {
          body = JSON.parse(message.payload);
        } catch {
          continue;
        }
        copies += 1;
        const seqs = seen.get(body.id) ?? new Set();
        seqs.add(body.seq);
        seen.set(body.id, seqs);
      }
      const missing = [...expected.keys()].filter((id) => !seen.has(id));
      const conflicting = [...seen.entries()].filter(([id, seqs]) => seqs.size > 1 || (expected.has(id) && !seqs.has(expected.get(id))));
      const unknown = [...seen.keys()].filter((id) => !expected.has(id));
      mqtt = {
        expected: expected.size,
        delivered: seen.size,
        missing: missing.length,
        conflicting: conflicting.length,
        redeliveries: copies - seen.size,
        unknown: unknown.length,
        outboxLeft,
      };
      if (missing.length > 0) violations.push(`${missing.length} MQTT events never reached the broker`);
      if (conflicting.length > 0) violations.push(`${conflicting.length} MQTT event ids name two different events`);
      if (unknown.length > 0) violations.push(`${unknown.length} MQTT events the device never committed`);
      if (outboxLeft > 0) violations.push(`${outboxLeft} outbox rows still unsent after the drain`);
    }

    return {
      orders: orders.length,
      byState: Object.fromEntries(
        db
          .prepare('SELECT state, count(*) AS n FROM orders GROUP BY state')
          .all()
          .map((r) => [r.state, r.n]),
      ),
      paid: paidInvoices.length,
      vended: count('vended'),
      refunded: count('refunded'),
      uncertain,
      killsWhileFiring,
      doubleVends,
      paidButUnsettled: unsettled.size,
      refundsLeftToPerson: refundsLeftToPerson.length,
      invoicesPerOrder: ordersWithInvoice === 0 ? 0 : invoices.length / ordersWithInvoice,
      extraInvoices,
      actuations: actuations.length,
      alarms: [...alarms],
      mqtt,
      violations,
    };
  } finally {
    db.close();
  }
}
