#!/usr/bin/env node
/**
 * Fiscal receipts soak (a proof, not a timed test): the compiled money path and fiscal part in one
 * process, on real SQLite files, with the sandbox payment provider and the sandbox fiscal register.
 *
 *   npm run build && node scripts/soak/receipts.mjs [--sales 1000] [--lost 0.2] [--seed 7] [--backlog-hours 72] [--pace 5]
 *
 * Phase 1: `--sales` sales a customer apart (the clock moves 30 s per sale), 3 % of vends fail,
 * 5 % of delivered vends are refunded by an operator; the register loses `--lost` of its answers
 * after committing and has outages of 5–30 min now and then. Phase 2: the register is down for
 * `--backlog-hours` while sales go on (one every 10 min), then comes back at `--pace` receipts a
 * second, and the backlog drains. Then every witness is compared: the gateway's receipts table, the
 * register's own file (receipts counted per order, whatever their key; calls that re-sent a key it
 * already held), the orders. Exit 1 on any violation. Time is a manual clock: the figures of
 * the register's pace are simulated seconds; the QR and vend times are real milliseconds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { observeDurableCommits, openDatabase } from '../../dist/store/index.js';
import { createManualClock } from '../../dist/util/clock.js';
import { silentLogger } from '../../dist/util/logger.js';
import { createOutbox } from '../../dist/outbox/index.js';
import { createOrderRepository, createProviderHealth } from '../../dist/orders/index.js';
import { createMoneyPath } from '../../dist/money/index.js';
import { observationOf } from '../../dist/ledger/index.js';
import { createSandboxProvider } from '../../dist/payments/sandbox/index.js';
import { parseSettings } from '../../dist/settings/index.js';
import { createFiscal } from '../../dist/fiscal/index.js';
import { createSandboxRegister, sandboxRegisterDbPath } from '../../dist/fiscal/sandbox.js';
import { createRandom } from './random.mjs';

const { values } = parseArgs({
  options: {
    sales: { type: 'string', default: '1000' },
    lost: { type: 'string', default: '0.2' },
    seed: { type: 'string', default: '7' },
    'backlog-hours': { type: 'string', default: '72' },
    pace: { type: 'string', default: '5' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(`node scripts/soak/receipts.mjs [--sales 1000] [--lost 0.2] [--seed 7] [--backlog-hours 72] [--pace 5] [--keep]
  The fiscal receipts soak (after npm run build): sales with register answers lost after commit and
  outages, then a backlog that drains at the register's pace; prints a JSON report, exit 1 on any
  violation of "one receipt per delivered vend, one return per refunded receipted sale" (counted per
  order from what the register issued, whatever the key) or any call that re-sent a key the register
  already held.`);
  process.exit(0);
}
const SALES = Number(values.sales);
const LOST = Number(values.lost);
const BACKLOG_HOURS = Number(values['backlog-hours']);
const PACE = Number(values.pace);
const random = createRandom(Number(values.seed));

const dir = mkdtempSync(join(tmpdir(), 'vendgate-receipts-soak-'));
const settings = parseSettings({
  device: {
    id: 'soak-rcpt',
    mode: 'vending',
    currency: 'MNT',
    catalog: [
      { slot: 'A1', name: 'Water', price: 1500 },
      { slot: 'A2', name: 'Cola', price: 2500 },
    ],
  },
  provider: { name: 'sandbox' },
  storage: { path: join(dir, 'vendgate.db') },
  mqtt: { url: '' },
  log: { level: 'silent' },
  actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl'), durationMs: 0 } },
  http: { local: { ordersPerMinute: 1_000_000, doublePressWindowMs: 0 } },
  fiscal: { register: 'sandbox', lookupEveryMs: 10_000, retryMaxMs: 60_000, alarmWaitingAfterMin: 60 },
});
const clock = createManualClock(Date.UTC(2026, 11, 1, 8, 0, 0));
const logger = silentLogger();
const db = openDatabase(settings.storage.path);
const outbox = createOutbox({ db, clock, deviceId: settings.device.id });
const orderRepository = createOrderRepository({ db, clock });
const sandbox = createSandboxProvider(
  { clock, logger },
  { dbPath: join(dir, 'sandbox.db'), payUrl: (id) => `http://127.0.0.1/pay/${id}`, webhookSecret: 'soak' },
);
const register = createSandboxRegister(
  { clock },
  { dbPath: sandboxRegisterDbPath(settings.storage.path), lostAnswerRate: LOST, random: random.next },
);
let stoppedFor = null;
// Started as the service starts it, so that a sale's first register call is claimed in its vend's
// settle commit, as on a device; its timer is set beyond the run, the soak makes its own passes.
const fiscal = createFiscal(
  { db, clock, logger, outbox, register, stopSales: (d) => (stoppedFor = d) },
  { ...settings.fiscal, intervalMs: 24 * 3_600_000 },
);
const machine = { failNext: false };
const actuator = {
  kind: 'sim',
  async start() {},
  async stop() {},
  health: () => ({ ok: true, detail: 'soak machine' }),
  async fire() {
    return machine.failNext ? { result: 'failed', reason: 'soak: motor stalled' } : { result: 'vended' };
  },
};
const money = createMoneyPath(
  {
    db,
    clock,
    logger,
    outbox,
    orderRepository,
    provider: sandbox.provider,
    actuator,
    health: createProviderHealth(clock),
    outOfService: () => stoppedFor,
    hooks: { runWorkersOnObserve: false },
    receipts: fiscal.receipts,
  },
  settings,
);
await money.recover();
fiscal.recover();
fiscal.start();
// Durable commits by step: a sale's receipt claimed in its settle commit makes no receipt_claim of its own.
const durableCommits = {};
observeDurableCommits((step) => (durableCommits[step] = (durableCommits[step] ?? 0) + 1));

const qrMs = [];
const vendMs = [];
const pass = async () => {
  await fiscal.worker.run();
  await fiscal.monitor.check();
};
const row = (orderId) => db.prepare("SELECT state, attempts FROM receipts WHERE order_id = ? AND kind = 'sale'").get(orderId);

async function sell() {
  const order = await money.orders.create({ source: 'cli', slot: random.chance(0.5) ? 'A1' : 'A2' });
  await sandbox.payments.pay(order.invoice_id);
  machine.failNext = random.chance(0.03);
  const paidAt = performance.now();
  money.ledger.observe(observationOf(await sandbox.provider.getInvoice(order.invoice_id), 'poll'));
  await money.vend.run();
  const vendedAt = performance.now();
  vendMs.push(vendedAt - paidAt);
  const settled = orderRepository.get(order.id);
  if (settled.state === 'vended') {
    // What the result screen does: the register's answer comes in (or not) while it is shown.
    await fiscal.worker.run();
    const screen = fiscal.screen(order.id);
    if (screen?.status === 'issued' && screen.qrData) qrMs.push(performance.now() - vendedAt);
    if (random.chance(0.05)) {
      money.vend.refund(order.id, 'soak operator');
      await money.refunds.run();
    }
  } else {
    await money.refunds.run();
  }
  return settled;
}

const t0 = performance.now();
// ---- Phase 1: sales with lost answers and outages.
let outages = 0;
for (let i = 0; i < SALES; i += 1) {
  if (random.chance(0.01)) {
    register.faults.outageUntil(clock.now() + random.int(5, 30) * 60_000);
    outages += 1;
  }
  await sell();
  clock.advance(30_000);
  await pass();
}
const phase1Ms = performance.now() - t0;

// ---- Phase 2: the register is down for BACKLOG_HOURS while sales go on, then returns at its pace.
// Down until the loop below ends (the register is switched back on by hand after it).
register.faults.outageUntil(clock.now() + 10 * BACKLOG_HOURS * 3_600_000);
register.faults.rates({ lostAnswerRate: 0 });
let backlogSales = 0;
const backlogEnd = clock.now() + BACKLOG_HOURS * 3_600_000;
while (clock.now() < backlogEnd) {
  await sell();
  backlogSales += 1;
  clock.advance(10 * 60_000);
  await pass();
}
const alarmsDuringOutage = outbox.openAlarms().map((a) => a.name);
const waitingBefore = fiscal.book.waiting().count;
// The register comes back at its own pace.
register.faults.pace(PACE);
register.faults.outageUntil(null);
const drain = fiscal;
const drainStart = clock.now();
const drainReal = performance.now();
let steps = 0;
let firstAt = null;
while (drain.book.waiting().count > 0 && steps < 10_000_000) {
  await drain.worker.run();
  // The first receipt after the return: each waiting receipt retries within fiscal.retryMaxMs.
  if (firstAt === null && drain.book.waiting().count < waitingBefore) firstAt = clock.now();
  clock.advance(Math.max(1, Math.round(1000 / PACE / 4)));
  steps += 1;
}
const drainSimSec = (clock.now() - (firstAt ?? drainStart)) / 1000;
const firstAfterSec = ((firstAt ?? drainStart) - drainStart) / 1000;
const drainRealMs = performance.now() - drainReal;
await drain.monitor.check();

// ---- The witnesses.
const held = register.held();
const orders = db.prepare('SELECT id, reference, state, vended_at FROM orders').all();
const receipts = db.prepare('SELECT order_id, kind, state, key, attempts FROM receipts').all();
const delivered = orders.filter((o) => o.vended_at !== null);
const failed = orders.filter((o) => o.vended_at === null);
const refundedDelivered = delivered.filter((o) => o.state === 'refunded');
// Counted per sale from what the register itself issued, whatever key each receipt came under:
// a second receipt for one sale under a new key counts as a duplicate as surely as one under the same key.
const issuedFor = new Map();
for (const r of held) issuedFor.set(`${r.kind}:${r.order_id}`, (issuedFor.get(`${r.kind}:${r.order_id}`) ?? 0) + 1);
const count = (kind, reference) => issuedFor.get(`${kind}:${reference}`) ?? 0;
const violations = [];
const references = new Set(orders.map((o) => o.reference));
for (const o of delivered) {
  const n = count('sale', o.reference);
  if (n !== 1) violations.push(`order ${o.reference}: ${n} sale receipts at the register`);
}
for (const o of failed) if (count('sale', o.reference)) violations.push(`failed vend ${o.reference} has a receipt`);
for (const o of delivered) {
  const n = count('return', o.reference);
  const owed = o.state === 'refunded' ? 1 : 0;
  if (n !== owed) violations.push(`${o.state} sale ${o.reference}: ${n} returns at the register, ${owed} owed`);
}
for (const r of held) if (!references.has(r.order_id)) violations.push(`register holds a ${r.kind} receipt for no order (${r.order_id})`);
// Receipts issued beyond the one each sale (or return) may have.
const duplicates = [...issuedFor.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0);
// Calls that presented a key the register already held: harmless at this register, but the worker
// sent them without asking the register first, which is a second receipt where the key is not enforced.
const repeats = register.repeats();
if (repeats.length)
  violations.push(
    `${repeats.length} calls re-sent a key the register already held (first: ${repeats[0].key}), none may be re-sent blindly`,
  );
const notIssued = receipts.filter((r) => r.state !== 'issued');
if (notIssued.length) violations.push(`${notIssued.length} receipts not issued at the end`);
if (held.length !== receipts.length) violations.push(`register holds ${held.length}, gateway rows ${receipts.length}`);

const pct = (xs, p) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 100) / 100;
};
const report = {
  date: new Date().toISOString(),
  machine: `${cpus().length} cores, ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
  seed: Number(values.seed),
  phase1: {
    sales: SALES,
    lostAnswerRate: LOST,
    outages,
    seconds: Math.round(phase1Ms / 100) / 10,
  },
  /** Both phases. */
  orders: { delivered: delivered.length, failedVends: failed.length, refundedAfterDelivery: refundedDelivered.length },
  receipts: {
    sales: receipts.filter((r) => r.kind === 'sale').length,
    returns: receipts.filter((r) => r.kind === 'return').length,
    // Claimed calls, outages included: an unknown outcome is looked up, never re-issued blindly.
    withMoreThanOneClaimedCall: receipts.filter((r) => r.attempts > 1).length,
    durableCommits,
    // Receipts the register issued beyond one per sale and one per return, counted per order.
    duplicatesAtRegister: duplicates,
    // Issue/return calls with a key the register already held (its reply was the receipt it held).
    keysPresentedAgain: {
      sale: repeats.filter((r) => r.kind === 'sale').length,
      return: repeats.filter((r) => r.kind === 'return').length,
    },
  },
  backlog: {
    hours: BACKLOG_HOURS,
    sales: backlogSales,
    waitingWhenRegisterReturned: waitingBefore,
    alarmsDuringOutage,
    registerPacePerSec: PACE,
    firstReceiptAfterReturnSec: Math.round(firstAfterSec * 10) / 10,
    drainSimulatedSec: Math.round(drainSimSec * 10) / 10,
    drainAtPaceSec: Math.round((waitingBefore / PACE) * 10) / 10,
    drainRealMs: Math.round(drainRealMs),
  },
  screen: {
    qrAfterVendMs: { samples: qrMs.length, p50: pct(qrMs, 50), p95: pct(qrMs, 95), max: pct(qrMs, 100) },
    vendMs: { samples: vendMs.length, p50: pct(vendMs, 50), p95: pct(vendMs, 95) },
  },
  violations,
};
console.log(JSON.stringify(report, null, 2));
await drain.stop();
sandbox.close();
db.close();
if (!values.keep) rmSync(dir, { recursive: true, force: true });
else console.error(`kept ${dir}`);
process.exit(violations.length ? 1 : 0);
