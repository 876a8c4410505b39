import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, databaseId, createRetention } from '../../dist/store/index.js';
import { createManualClock } from '../../dist/util/clock.js';
import { silentLogger } from '../../dist/util/logger.js';
import { createOutbox } from '../../dist/outbox/index.js';
import { createLedger } from '../../dist/ledger/index.js';
import { createOrderRepository, createOrderService, createProviderHealth } from '../../dist/orders/index.js';
import { createVendRunner } from '../../dist/vend/index.js';
import { parseSettings } from '../../dist/settings/index.js';
import { row } from './lib.mjs';

/**
 * Database size over a simulated 30-day soak at one paid order a minute (manual clock), through the
 * real order service, ledger and vend runner: with retention (pruning every 10 simulated minutes, as
 * the app does) and, as the baseline in the same run, without. The MQTT broker is taken as connected
 * (outbox rows acknowledged as they come); each order also brings two processed webhook bodies.
 */
function memoryProvider(clock) {
  const invoices = new Map();
  let seq = 0;
  const copy = (id) => ({ ...invoices.get(id) });
  return {
    name: 'gerege',
    async createInvoice(r) {
      const id = `pi_${String(++seq).padStart(24, '0')}`;
      invoices.set(id, {
        id,
        status: 'pending',
        providerStatus: 'requires_payment',
        amount: r.amount,
        currency: r.currency,
        reference: r.reference,
        livemode: false,
        payUrl: `https://pay.example/${id}`,
        expiresAt: clock.now() + r.expiresInSec * 1000,
      });
      return copy(id);
    },
    async getInvoice(id) {
      return copy(id);
    },
    async cancelInvoice(id) {
      return copy(id);
    },
    async captureInvoice(id) {
      return copy(id);
    },
    async refund() {
      return { status: 'succeeded' };
    },
    verifyWebhook() {
      throw new Error('unused');
    },
    async checkCredentials() {
      return { detail: 'memory' };
    },
    pay(id) {
      invoices.get(id).status = 'paid';
      invoices.get(id).providerStatus = 'succeeded';
    },
  };
}

function fileMb(path) {
  const size = (p) => (existsSync(p) ? statSync(p).size : 0);
  return Math.round(((size(path) + size(`${path}-wal`)) / 2 ** 20) * 100) / 100;
}

async function simulate({ days, retentionDays, log }) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-'));
  const path = join(dir, 'vendgate.db');
  const settings = parseSettings({
    device: { id: 'bench-db', mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
    provider: { name: 'sandbox' },
    storage: { path, retentionDays: retentionDays ?? 90 },
    mqtt: { url: '' },
    log: { level: 'silent' },
  });
  const clock = createManualClock(Date.UTC(2026, 0, 1));
  const logger = silentLogger();
  const db = openDatabase(path);
  try {
    const outbox = createOutbox({ db, clock, deviceId: 'bench-db' });
    const orderRepository = createOrderRepository({ db, clock });
    const ledger = createLedger({ db, clock, logger, outbox, orderRepository });
    const provider = memoryProvider(clock);
    const orders = createOrderService(
      {
        db,
        clock,
        logger,
        outbox,
        orderRepository,
        provider,
        ledger,
        health: createProviderHealth(clock),
        deviceId: 'bench-db',
        dbId: databaseId(db),
        outOfService: () => null,
      },
      settings,
    );
    const actuator = {
      kind: 'sim',
      async start() {},
      async stop() {},
      health: () => ({ ok: true, detail: '' }),
      async fire() {
        return { result: 'vended' };
      },
    };
    const vend = createVendRunner(
      { db, clock, logger, outbox, orderRepository, actuator, provider },
      { mode: 'vending', vendTimeoutMs: 30_000, notPassedPolicy: 'refund' },
    );
    const retention = retentionDays ? createRetention({ db, clock, logger }, { retentionDays }) : null;
    const webhook =
      db.prepare(`INSERT INTO webhook_events (event_id, provider, type, object_id, livemode, raw_body, source, received_at, processed_at)
      VALUES (?, 'gerege', ?, ?, 0, ?, 'webhook', ?, ?)`);
    const sizes = [];
    let eventSeq = 0;
    for (let minute = 0; minute < days * 1440; minute += 1) {
      clock.advance(60_000);
      const order = await orders.create({ source: 'kiosk', slot: 'A1' });
      provider.pay(order.invoice_id);
      for (const type of ['payment_intent.claimed', 'payment_intent.succeeded']) {
        const id = `evt_${String(++eventSeq).padStart(24, '0')}`;
        const body = JSON.stringify({
          id,
          object: 'event',
          type,
          livemode: false,
          created: Math.floor(clock.now() / 1000),
          data: {
            object: {
              id: order.invoice_id,
              object: 'payment_intent',
              status: type.split('.')[1],
              amount: 1500,
              currency: 'MNT',
              reference: order.reference,
              livemode: false,
              pay_url: `https://pay.example/${order.invoice_id}`,
              expires_at: 0,
              created: 0,
            },
          },
        });
        webhook.run(id, type, order.invoice_id, Buffer.from(body), clock.now(), clock.now() + 5);
      }
      const invoice = await provider.getInvoice(order.invoice_id);
      ledger.observe({
        invoiceId: invoice.id,
        status: invoice.status,
        providerStatus: invoice.providerStatus,
        livemode: false,
        amount: invoice.amount,
        currency: invoice.currency,
        channel: 'webhook',
      });
      await vend.run();
      // The broker is connected: the publisher deletes each row on its PUBACK.
      for (const r of outbox.pending(1_000)) outbox.acknowledge(r.seq);
      if (retention && minute % 10 === 9) await retention.pruneAll();
      if (minute % 1440 === 1439) {
        db.pragma('wal_checkpoint(TRUNCATE)');
        const day = (minute + 1) / 1440;
        sizes.push({
          day,
          mb: fileMb(path),
          orders: db.prepare('SELECT count(*) FROM orders').pluck().get(),
          freePages: db.pragma('freelist_count', { simple: true }),
        });
        if (day % 5 === 0)
          log(`db size: day ${day} ${retentionDays ? `retention ${retentionDays} d` : 'no retention'}: ${sizes.at(-1).mb} MB`);
      }
    }
    return sizes;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function dbSizeBench({ log, quick }) {
  const days = quick ? 10 : 30;
  const retentionDays = quick ? 3 : 7;
  const started = Date.now();
  const withRetention = await simulate({ days, retentionDays, log });
  const without = await simulate({ days, retentionDays: null, log });
  const at = (sizes, day) => sizes.find((s) => s.day === day);
  const mid = Math.round(days / 2);
  const end = at(withRetention, days);
  const half = at(withRetention, mid);
  const bounded = end.mb <= half.mb * 1.1;
  return {
    name: 'db-size',
    settings: { days, ordersPerMinute: 1, retentionDays, wallMs: Date.now() - started },
    results: { withRetention, without },
    rows: [
      row(
        `database size, ${days}-day simulated soak at 1 order/min, retentionDays ${retentionDays}: day ${mid} → day ${days}`,
        `${half.mb} → ${end.mb} MB (${end.orders} orders kept)`,
        `bounded (day ${days} ≤ 1.1 × day ${mid})`,
        bounded,
      ),
      row(
        `  baseline, same run without retention: day ${mid} → day ${days}`,
        `${at(without, mid).mb} → ${at(without, days).mb} MB (${at(without, days).orders} orders)`,
        'grows linearly',
        null,
      ),
    ],
  };
}
