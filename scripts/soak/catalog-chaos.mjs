import Database from 'better-sqlite3';
import mqtt from 'mqtt';
import { createCatalog } from '../../dist/catalog/index.js';
import { createOutbox } from '../../dist/outbox/index.js';
import { openDatabase } from '../../dist/store/index.js';
import { systemClock } from '../../dist/util/clock.js';
import { silentLogger } from '../../dist/util/logger.js';
import { sleep } from './driver.mjs';

/**
 * The soak's catalog, stock and jam chaos: an operator who publishes new prices (and now and then a
 * broken catalog or a rollback) over MQTT, a technician who clears the jammed slot with what
 * `vendgate clear-jam` runs, and the witnesses that check every order was priced from the catalog
 * in use when it was created, that stock moved only on delivered vends, and that nothing was sold
 * from a slot while it was jammed or sold out.
 */

export const SOAK_CATALOG = [
  { slot: 'A1', name: 'Water', price: 1500 },
  { slot: 'A2', name: 'Cola', price: 2500 },
  { slot: 'B1', name: 'Crisps', price: 2000 },
];
/** The slot whose motor is jammed in every segment: its vends fail and it goes out of sale. */
export const JAMMED_SLOT = 'A2';
export const INITIAL_STOCK = { A1: 10_000, B1: 4 };
const PRICES = [1000, 1500, 1800, 2000, 2500, 3000];

function catalogOn(dbPath, deviceId) {
  const db = openDatabase(dbPath);
  const outbox = createOutbox({ db, clock: systemClock, deviceId });
  const catalog = createCatalog(
    { db, clock: systemClock, logger: silentLogger(), outbox },
    { device: { catalog: SOAK_CATALOG }, slots: { jamAfterFailures: 2, lowStockAt: 2 } },
  );
  return { catalog, close: () => db.close() };
}

/** Before the first start: counted stock (A2 stays uncounted), and witnesses of every slot change. */
export function prepareCatalogSoak(dbPath, deviceId) {
  const { catalog, close } = catalogOn(dbPath, deviceId);
  try {
    for (const [slot, count] of Object.entries(INITIAL_STOCK)) catalog.slots.refill(slot, count, 'soak');
  } finally {
    close();
  }
  const db = new Database(dbPath);
  db.exec(`CREATE TABLE soak_slot_log (n INTEGER PRIMARY KEY AUTOINCREMENT, slot TEXT, stock INTEGER, jammed_at INTEGER, at INTEGER);
    CREATE TRIGGER soak_slot_log_insert AFTER INSERT ON slot_state BEGIN INSERT INTO soak_slot_log (slot, stock, jammed_at, at) VALUES (NEW.slot, NEW.stock, NEW.jammed_at, NEW.updated_at); END;
    CREATE TRIGGER soak_slot_log_update AFTER UPDATE ON slot_state BEGIN INSERT INTO soak_slot_log (slot, stock, jammed_at, at) VALUES (NEW.slot, NEW.stock, NEW.jammed_at, NEW.updated_at); END;`);
  db.close();
}

/** The operator: a new catalog every few seconds over the broker; sometimes a broken one, sometimes a rollback. */
export function catalogOperator({ brokerUrl, prefix, deviceId, random, stats, isStopping, pause }) {
  const base = `${prefix}/${deviceId}`;
  const client = mqtt.connect(brokerUrl, {
    clientId: `soak-operator-${deviceId}`,
    protocolVersion: 4,
    reconnectPeriod: 200,
    connectTimeout: 2_000,
  });
  client.on('error', () => {});
  client.on('connect', () => client.subscribe(`${base}/cmd/+/result`, { qos: 1 }));
  client.on('message', (topic, payload) => {
    let body;
    try {
      body = JSON.parse(payload.toString());
    } catch {
      return;
    }
    const kind = String(body.requestId ?? '').split('-')[0];
    const key = `${kind}:${body.ok ? 'ok' : (body.error?.code ?? 'error')}`;
    stats.catalogResults[key] = (stats.catalogResults[key] ?? 0) + 1;
  });
  let n = 0;
  const done = (async () => {
    while (!isStopping()) {
      await pause(random.int(800, 2_500));
      if (isStopping() || !client.connected) continue;
      n += 1;
      const draw = random.next();
      if (draw < 0.15) {
        client.publish(`${base}/cmd/catalog_rollback`, JSON.stringify({ requestId: `rollback-${n}` }), { qos: 1 });
        stats.catalogPushes.rollback += 1;
      } else if (draw < 0.3) {
        const broken = {
          version: `broken-${n}`,
          items: [
            { slot: 'A1', name: '', price: -1 },
            { slot: 'A1', name: 'twice', price: 1 },
          ],
        };
        client.publish(`${base}/cmd/catalog`, JSON.stringify({ requestId: `broken-${n}`, catalog: broken }), { qos: 1 });
        stats.catalogPushes.broken += 1;
      } else {
        const items = SOAK_CATALOG.map((item) => ({ ...item, price: PRICES[random.int(0, PRICES.length - 1)] }));
        client.publish(`${base}/cmd/catalog`, JSON.stringify({ requestId: `push-${n}`, catalog: { version: `soak-${n}`, items } }), {
          qos: 1,
        });
        stats.catalogPushes.valid += 1;
      }
    }
    await new Promise((resolve) => client.end(false, {}, resolve));
  })();
  return done;
}

/** The technician: clears the jammed slot now and then, from another process's connection (as the CLI does). */
export function technician({ dbPath, deviceId, random, stats, isStopping, pause }) {
  return (async () => {
    while (!isStopping()) {
      await pause(random.int(1_500, 4_000));
      if (isStopping()) break;
      const { catalog, close } = catalogOn(dbPath, deviceId);
      try {
        if (catalog.slots.clearJam(JAMMED_SLOT, 'soak technician').wasJammed) stats.jamsCleared += 1;
      } catch (err) {
        stats.technicianErrors.push(err.message);
      } finally {
        close();
      }
      await sleep(0);
    }
  })();
}

/** Intervals during which a slot could not be sold: jammed (jammed_at set) or sold out (stock 0). */
function closedIntervals(rows) {
  const intervals = [];
  const open = new Map();
  for (const row of rows) {
    for (const [why, closed] of [
      ['jammed', row.jammed_at !== null],
      ['sold out', row.stock === 0],
    ]) {
      const key = `${row.slot}:${why}`;
      const since = open.get(key);
      if (closed && since === undefined) open.set(key, why === 'jammed' ? row.jammed_at : row.at);
      if (!closed && since !== undefined) {
        intervals.push({ slot: row.slot, why, from: since, to: row.at });
        open.delete(key);
      }
    }
  }
  for (const [key, from] of open) {
    const [slot, why] = key.split(':');
    intervals.push({ slot, why, from, to: Infinity });
  }
  return intervals;
}

export function verifyCatalog({ dbPath, records }) {
  const db = new Database(dbPath, { readonly: true });
  try {
    const violations = [];
    const versions = db
      .prepare('SELECT seq, version, document, applied_at, rolled_back_at FROM catalog_versions ORDER BY seq')
      .all()
      .map((row) => ({ ...row, items: JSON.parse(row.document).items }));
    const priceAt = (slot, t) => {
      const current = versions.filter((v) => v.applied_at <= t && (v.rolled_back_at === null || v.rolled_back_at > t)).at(-1);
      return (current?.items ?? SOAK_CATALOG).find((item) => item.slot === slot)?.price;
    };
    const orders = db.prepare('SELECT id, reference, slot, amount, state, created_at FROM orders ORDER BY id').all();
    const invoiceAmount = new Map(records.invoices.map((i) => [i.reference, i.amount]));
    let wrongPrice = 0;
    for (const o of orders) {
      // A push in the same millisecond as the order may fall on either side of it.
      const allowed = new Set([priceAt(o.slot, o.created_at), priceAt(o.slot, o.created_at - 1)]);
      if (!allowed.has(o.amount)) {
        wrongPrice += 1;
        if (wrongPrice <= 5)
          violations.push(`order ${o.id} (${o.slot}) priced ${o.amount}, the catalog in use said ${[...allowed].join(' or ')}`);
      }
      if (invoiceAmount.has(o.reference) && invoiceAmount.get(o.reference) !== o.amount)
        violations.push(`order ${o.id} amount ${o.amount} but its invoice ${invoiceAmount.get(o.reference)}`);
    }
    if (versions.some((v) => v.version.startsWith('broken'))) violations.push('a broken catalog was applied');

    const slotRows = db.prepare('SELECT slot, stock, jammed_at, at FROM soak_slot_log ORDER BY n').all();
    let soldWhileClosed = 0;
    for (const interval of closedIntervals(slotRows)) {
      for (const o of orders) {
        if (o.slot === interval.slot && o.created_at > interval.from && o.created_at < interval.to) {
          soldWhileClosed += 1;
          violations.push(`order ${o.id} created for ${o.slot} while it was ${interval.why}`);
        }
      }
    }
    const stock = Object.fromEntries(
      db
        .prepare('SELECT slot, stock FROM slot_state')
        .all()
        .map((r) => [r.slot, r.stock]),
    );
    const vendedBySlot = Object.fromEntries(
      db
        .prepare("SELECT slot, count(*) AS n FROM orders WHERE state = 'vended' GROUP BY slot")
        .all()
        .map((r) => [r.slot, r.n]),
    );
    for (const [slot, initial] of Object.entries(INITIAL_STOCK)) {
      const expected = Math.max(0, initial - (vendedBySlot[slot] ?? 0));
      if (stock[slot] !== expected)
        violations.push(`slot ${slot}: stock ${stock[slot]}, expected ${initial} − ${vendedBySlot[slot] ?? 0} delivered = ${expected}`);
      if ((vendedBySlot[slot] ?? 0) > initial) violations.push(`slot ${slot}: ${vendedBySlot[slot]} delivered from a stock of ${initial}`);
    }
    // Times a slot went out of sale: its jammed_at going from unset to set.
    let jams = 0;
    const lastJam = new Map();
    for (const row of slotRows) {
      if (row.jammed_at !== null && (lastJam.get(row.slot) ?? null) === null) jams += 1;
      lastJam.set(row.slot, row.jammed_at);
    }
    return {
      violations,
      figures: {
        catalogVersionsApplied: versions.length,
        rolledBack: versions.filter((v) => v.rolled_back_at !== null).length,
        wrongPrice,
        soldWhileClosed,
        jams,
        stock,
        vendedBySlot,
      },
    };
  } finally {
    db.close();
  }
}
