import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSimulator } from '../../dist/simulator/index.js';
import { openDatabase } from '../../dist/store/index.js';
import { startBroker } from './broker.mjs';
import { createDriver, sleep } from './driver.mjs';
import { createRandom } from './random.mjs';
import { createServiceProcess, freePort } from './service.mjs';
import { verify } from './verify.mjs';
import { catalogOperator, JAMMED_SLOT, prepareCatalogSoak, SOAK_CATALOG, technician, verifyCatalog } from './catalog-chaos.mjs';

/**
 * One soak run: the real compiled service against the Gerege simulator with webhooks on and every
 * fault, SIGKILLed at random moments and restarted, a sim actuator that sometimes fails (jams, NAKs,
 * motors that turn with nothing falling past the drop sensor) and a slot that always jams, an MQTT
 * broker that goes away and comes back, an operator pushing new catalogs (some broken, some rolled
 * back) over it, a technician clearing the jammed slot, and a stream of customers. Then everything drains and the
 * four witnesses (database, simulator, actuator log, broker) are checked against the invariants.
 */

/** Probabilities per request / delivery; `webhookOutage` windows are driven by the chaos loop. */
export const FAULTS_ALL = {
  duplicateWebhook: 0.1,
  reorderWebhooks: 0.1,
  delayWebhookMs: 20,
  dropWebhook: 0.05,
  lateStaleEvent: 0.1,
  rateLimit: 0.02,
  serverError: 0.03,
  timeout: 0.01,
  lostResponse: 0.02,
  refundUnknown: 0,
};

export function parseFaults(spec) {
  if (spec === 'all') return { ...FAULTS_ALL, outages: true };
  if (spec === 'none' || spec === '') return { outages: false };
  const out = { outages: false };
  for (const name of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (name === 'webhookOutage') out.outages = true;
    else if (name in FAULTS_ALL) out[name] = FAULTS_ALL[name];
    else throw new Error(`unknown fault "${name}"; known: all, none, webhookOutage, ${Object.keys(FAULTS_ALL).join(', ')}`);
  }
  return out;
}

const PREFIX = 'vendgate';

function percentiles(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? null;
  return { n: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted.at(-1) ?? null };
}
const UNSETTLED_STATES = "('creating', 'awaiting_payment', 'paid', 'authorized', 'vending', 'refunding')";
/** A refund parked for a person (unknown outcome, alarm raised) does not hold the drain up: the verdict counts it. */
const PARKED_REFUND = "(r.state = 'unknown' AND r.alarmed_at IS NOT NULL)";

export async function runSoak(options) {
  const {
    orders: total,
    seed,
    killEverySec,
    mqtt: mqttEnabled = true,
    failRate = 0.05,
    drainTimeoutMs = 120_000,
    log = () => {},
  } = options;
  const faults = parseFaults(options.faults ?? 'all');
  const { outages, ...simFaults } = faults;
  const random = createRandom(seed);
  const chaosRandom = createRandom((seed ^ 0x5bd1e995) >>> 0);
  // Its own draws, so the kills, broker stops and outages of a seed stay where they were.
  const catalogRandom = createRandom((seed ^ 0x27d4eb2f) >>> 0);
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-soak-'));
  const dbPath = join(dir, 'vendgate.db');
  const simLogPath = join(dir, 'actuations.jsonl');
  const deviceId = `soak-${seed}`;
  const startedAt = Date.now();
  const localPort = await freePort();
  const webhookPort = await freePort();
  const broker = mqttEnabled ? await startBroker() : null;
  const sim = createSimulator({
    provider: 'gerege',
    seed,
    webhookUrl: `http://127.0.0.1:${webhookPort}/webhooks/gerege`,
    faults: simFaults,
  });
  await sim.start();

  // Soak instrumentation (not part of the product): a trigger copies every committed outbox row, the
  // ground truth for "did operators see every event?". The migrations run first, as the service would.
  openDatabase(dbPath).close();
  const instrument = new Database(dbPath);
  instrument.exec(`CREATE TABLE soak_outbox_log (seq INTEGER, id TEXT, kind TEXT, topic TEXT);
    CREATE TRIGGER soak_outbox_log AFTER INSERT ON outbox BEGIN INSERT INTO soak_outbox_log VALUES (NEW.seq, NEW.id, NEW.kind, NEW.topic); END;`);
  instrument.close();
  prepareCatalogSoak(dbPath, deviceId);

  let segment = 0;
  const config = () => ({
    device: { id: deviceId, mode: 'vending', currency: 'MNT', catalog: SOAK_CATALOG },
    slots: { jamAfterFailures: 2, lowStockAt: 2 },
    provider: {
      name: 'gerege',
      baseUrl: sim.url,
      clientId: 'sim-client',
      invoiceTtlSec: 30,
      requestTimeoutMs: 1_000,
      createDeadlineMs: 6_000,
      refundUnknownAlarmSec: 10,
    },
    poll: { intervalMs: 200, maxBackoffMs: 2_000, lateGraceSec: 60 },
    http: {
      // A soak orders far faster than a customer and replaces open orders on purpose: no rate limit, no double-press merging.
      local: { host: '127.0.0.1', port: localPort, ordersPerMinute: 1_000_000, doublePressWindowMs: 0 },
      webhook: {
        host: '127.0.0.1',
        port: webhookPort,
        retryBaseMs: 100,
        retryMaxMs: 2_000,
        silenceGraceSec: 2,
        backfillLookbackSec: 3_600,
      },
    },
    storage: { path: dbPath },
    // A different failure mode and draw sequence in every segment between two kills.
    actuator: {
      kind: 'sim',
      deliveryWindowMs: 300,
      sim: {
        logPath: simLogPath,
        durationMs: 10,
        failMode: ['fail', 'nak', 'no_drop'][segment % 3],
        failRate,
        failSeed: seed * 1_000 + segment,
        dropSensor: true,
        jamSlots: [JAMMED_SLOT],
      },
    },
    mqtt: broker ? { url: broker.url, prefix: PREFIX, reconnectMinMs: 200, reconnectMaxMs: 1_000, connectTimeoutMs: 2_000 } : { url: '' },
    log: { level: 'info' },
  });
  const service = createServiceProcess({
    configPath: join(dir, 'config.yaml'),
    config,
    env: { VENDGATE_PROVIDER_CLIENT_SECRET: 'sim-secret', VENDGATE_WEBHOOK_SECRETS: 'whsec_simulator' },
  });
  const readyTimes = [];
  readyTimes.push((await service.start()).readyMs);

  const kills = [];
  const stats = {
    behaviours: {},
    finalStates: {},
    createFailed: {},
    createWaits: {},
    slowOrders: [],
    createMs: [],
    orderMs: [],
    payments: 0,
    retriedRequests: 0,
    brokerStops: 0,
    outages: 0,
    catalogPushes: { valid: 0, broken: 0, rollback: 0 },
    catalogResults: {},
    jamsCleared: 0,
    technicianErrors: [],
  };
  let stopping = false;
  let served = 0;
  const chaosDone = [];
  const pause = async (ms, until = () => false) => {
    const end = Date.now() + ms;
    while (!stopping && Date.now() < end && !until()) await sleep(Math.min(20, end - Date.now()));
  };

  if (killEverySec > 0) {
    chaosDone.push(
      (async () => {
        let servedAtKill = -1;
        while (!stopping) {
          // A short run still sees a kill: halfway through, if none has landed yet.
          await pause(killEverySec * 1_000 * (0.5 + chaosRandom.next()), () => kills.length === 0 && served >= total / 2);
          // And the service gets work done between two kills, however slow the machine: at least one
          // customer more has finished since the last one (on a loaded CI machine a 2 s clock alone
          // killed every start before it could vend).
          await pause(Number.POSITIVE_INFINITY, () => served > servedAtKill);
          if (stopping) break;
          servedAtKill = served;
          await service.kill('SIGKILL');
          // What the disk says at the instant of death: was the machine moving?
          const db = new Database(dbPath, { readonly: true, fileMustExist: true });
          const firing = db.prepare("SELECT order_id FROM vend_jobs WHERE state = 'firing'").pluck().get() ?? null;
          db.close();
          kills.push({ at: Date.now() - startedAt, afterOrders: served, firingOrderId: firing });
          segment += 1;
          readyTimes.push((await service.start()).readyMs);
          log(`kill ${kills.length} after ${served} orders${firing === null ? '' : ` (order ${firing} was firing)`}`);
        }
      })(),
    );
  }
  if (broker) {
    chaosDone.push(
      (async () => {
        while (!stopping) {
          await pause(chaosRandom.int(3_000, 9_000));
          if (stopping) break;
          await broker.stop();
          stats.brokerStops += 1;
          await pause(chaosRandom.int(300, 2_000));
          await broker.start();
        }
        await broker.start();
      })(),
    );
  }
  if (broker)
    chaosDone.push(
      catalogOperator({ brokerUrl: broker.url, prefix: PREFIX, deviceId, random: catalogRandom, stats, isStopping: () => stopping, pause }),
    );
  chaosDone.push(technician({ dbPath, deviceId, random: catalogRandom, stats, isStopping: () => stopping, pause }));
  if (outages) {
    chaosDone.push(
      (async () => {
        while (!stopping) {
          await pause(chaosRandom.int(5_000, 15_000));
          if (stopping) break;
          sim.setFaults({ webhookOutage: true });
          stats.outages += 1;
          await pause(chaosRandom.int(500, 3_000));
          sim.setFaults({ webhookOutage: false });
        }
        sim.setFaults({ webhookOutage: false });
      })(),
    );
  }

  const localUrl = `http://127.0.0.1:${localPort}`;
  const driver = createDriver({ localUrl, sim, random, stats, isStopping: () => false });
  let driveError = null;
  try {
    for (served = 0; served < total; served += 1) {
      await driver.customer();
      if ((served + 1) % 500 === 0) log(`${served + 1} orders in ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
    }
  } catch (err) {
    driveError = err;
  }
  const driveMs = Date.now() - startedAt;

  // Drain: no more chaos; the last customer's QR is closed; everything settles and is published.
  stopping = true;
  await Promise.all(chaosDone);
  if (!service.running) readyTimes.push((await service.start()).readyMs);
  const drainStarted = Date.now();
  let drained = false;
  let lastOpen = null;
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    while (Date.now() - drainStarted < drainTimeoutMs) {
      for (const id of db.prepare("SELECT id FROM orders WHERE state = 'awaiting_payment'").pluck().all())
        await driver.cancel(id).catch(() => {});
      lastOpen = {
        orders: db
          .prepare(
            `SELECT count(*) FROM orders o WHERE state IN ${UNSETTLED_STATES}
                             AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.id AND ${PARKED_REFUND})`,
          )
          .pluck()
          .get(),
        refunds: db
          .prepare(`SELECT count(*) FROM refunds r WHERE state NOT IN ('succeeded', 'failed') AND NOT ${PARKED_REFUND}`)
          .pluck()
          .get(),
        webhooks: db.prepare('SELECT count(*) FROM webhook_events WHERE processed_at IS NULL').pluck().get(),
        outbox: mqttEnabled ? db.prepare('SELECT count(*) FROM outbox').pluck().get() : 0,
      };
      if (Object.values(lastOpen).every((n) => n === 0)) {
        drained = true;
        break;
      }
      await sleep(100);
    }
  } finally {
    db.close();
  }
  await service.kill('SIGTERM');
  await sim.stop();
  await broker?.stop();

  const report = verify({
    dbPath,
    simLogPath,
    records: sim.records(),
    received: broker?.received ?? [],
    deviceId,
    prefix: PREFIX,
    kills,
    mqttEnabled,
  });
  const catalogVerdict = verifyCatalog({ dbPath, records: sim.records() });
  report.violations.push(...catalogVerdict.violations, ...stats.technicianErrors.map((e) => `technician: ${e}`));
  report.catalog = {
    ...catalogVerdict.figures,
    pushes: stats.catalogPushes,
    results: stats.catalogResults,
    jamsCleared: stats.jamsCleared,
  };
  if (driveError) report.violations.push(`the customers could not go on: ${driveError.message}`);
  if (!drained) report.violations.push(`not settled ${drainTimeoutMs / 1000} s after the last order: ${JSON.stringify(lastOpen)}`);
  const records = sim.records();
  Object.assign(report, {
    seed,
    faults: options.faults ?? 'all',
    killEverySec,
    mqttEnabled,
    failRate,
    wallMs: Date.now() - startedAt,
    driveMs,
    drainMs: Date.now() - drainStarted,
    ordersPerSec: total / (driveMs / 1000),
    kills: kills.length,
    restarts: service.starts - 1,
    readyMs: { max: Math.max(...readyTimes), median: readyTimes.sort((a, b) => a - b)[Math.floor(readyTimes.length / 2)] },
    brokerStops: stats.brokerStops,
    webhookOutages: stats.outages,
    customers: stats.behaviours,
    finalStates: stats.finalStates,
    createFailed: stats.createFailed,
    createWaits: stats.createWaits,
    slowOrders: stats.slowOrders.length,
    createMs: percentiles(stats.createMs),
    orderMs: percentiles(stats.orderMs),
    providerRequests: records.requests.length,
    webhookDeliveries: records.deliveries.length,
    dir: options.keepDir ? dir : null,
  });
  if (!options.keepDir) rmSync(dir, { recursive: true, force: true });
  return report;
}
