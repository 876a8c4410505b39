import { afterEach, beforeEach, vi } from 'vitest';
import { join } from 'node:path';
import { commandSettings } from './operator.js';
import { parseSettings, SettingsError, type Settings, type SettingsInput } from '../../src/settings/index.js';
import { openDatabase, type Db } from '../../src/store/index.js';
import { createManualClock, type Clock } from '../../src/util/clock.js';
import { silentLogger, type Logger } from '../../src/util/logger.js';
import { createOutbox, type Outbox } from '../../src/outbox/index.js';
import { createOrderRepository, createProviderHealth, type OrderRepository, type ProviderHealth } from '../../src/orders/index.js';
import { createMoneyPath, type MoneyPath } from '../../src/money/index.js';
import { observationOf } from '../../src/ledger/index.js';
import type { Actuator, VendRequest } from '../../src/hardware/index.js';
import type { PaymentProvider, ProviderCallOutcome } from '../../src/payments/types.js';
import { createVendRunner, type ReceiptPort } from '../../src/vend/index.js';
import { createFakeProvider } from '../fakes/provider.js';
import { tempDir } from './temp.js';
import { openMigrated } from './database.js';

export const CATALOG = [
  { slot: 'A1', name: 'Water', price: 1500 },
  { slot: 'A2', name: 'Cola', price: 2500 },
];

/** Test settings: vending demo device on a temp directory; `overrides` merged per section. */
export function testSettings(dir: string, overrides: Partial<Record<keyof SettingsInput, Record<string, unknown>>> = {}) {
  return parseSettings({
    device: { id: 'vm-test', mode: 'vending', currency: 'MNT', catalog: CATALOG, ...overrides.device },
    provider: { name: 'sandbox', invoiceTtlSec: 120, ...overrides.provider },
    storage: { path: join(dir, 'vendgate.db'), ...overrides.storage },
    actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl'), durationMs: 0 }, ...overrides.actuator },
    mqtt: { url: '', ...overrides.mqtt },
    log: { level: 'silent' },
    poll: { intervalMs: 100, ...overrides.poll },
    http: { local: { host: '127.0.0.1', port: 0 }, webhook: { host: '127.0.0.1', port: 0 } },
    ...(overrides.policy ? { policy: overrides.policy } : {}),
    // The tests' operator (test/helpers/operator.ts) is trusted: its signed commands run.
    commands: { keys: commandSettings().keys, ...overrides.commands },
    ...(overrides.pricing ? { pricing: overrides.pricing } : {}),
    ...(overrides.fiscal ? { fiscal: overrides.fiscal } : {}),
    ...(overrides.kiosk ? { kiosk: overrides.kiosk } : {}),
  });
}

export interface CoreDeps {
  settings: Readonly<Settings>;
  clock: Clock;
  logger: Logger;
  provider: PaymentProvider;
  actuator: Actuator;
  /** Why the device takes no orders right now, or null (default: always in service). */
  outOfService?: () => string | null;
  /** Fiscal receipts (test/fiscal/): built on this node's database and outbox, told by the money path. */
  receipts?: (parts: { db: Db; outbox: Outbox }) => ReceiptPort;
}

/** One composed "process": its database connection and what the money path is built on. */
export interface CoreNode {
  db: Db;
  outbox: Outbox;
  /** The node's one order repository, as the app has one per process. */
  orderRepository: OrderRepository;
  health: ProviderHealth;
  money: MoneyPath;
}

/** The problems a settings parse or load reports (SettingsError.problems); [] when it passes. */
export function settingsProblems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof SettingsError) return err.problems;
    throw err;
  }
  return [];
}

/**
 * The one test composition of the money path: the database at `settings.storage.path` opened as the
 * service opens it, its outbox and provider health, and `createMoneyPath` — the product's own wiring
 * (src/money/) that app.ts builds — with each worker run only when the test says so. `buildCore`
 * composes it once; the property world composes it again after every crash or restore.
 */
export function composeMoneyPath(deps: CoreDeps): CoreNode {
  const { settings, clock, logger, provider, actuator } = deps;
  const db = openMigrated(settings.storage.path);
  const outbox = createOutbox({ db, clock, deviceId: settings.device.id });
  const health = createProviderHealth(clock);
  const orderRepository = createOrderRepository({ db, clock });
  const money = createMoneyPath(
    {
      db,
      clock,
      logger,
      outbox,
      orderRepository,
      provider: reportingCalls(provider, (outcome) => health.heard(outcome)),
      actuator,
      health,
      outOfService: deps.outOfService ?? (() => null),
      hooks: { runWorkersOnObserve: false },
      ...(deps.receipts ? { receipts: deps.receipts({ db, outbox }) } : {}),
    },
    settings,
  );
  return { db, outbox, orderRepository, health, money };
}

/**
 * `provider` as the device sees a provider built on the payments HTTP client: the outcome of each
 * call is told to `onCall` (HttpClientDeps.onCall, which provider health subscribes to in app.ts).
 */
export function reportingCalls(provider: PaymentProvider, onCall: (outcome: ProviderCallOutcome) => void): PaymentProvider {
  return new Proxy(provider, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || key === 'verifyWebhook') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        return result.then(
          (answer: unknown) => {
            onCall({ ok: true });
            return answer;
          },
          (error: unknown) => {
            onCall({ ok: false, error });
            throw error;
          },
        );
      };
    },
  });
}

/** A machine in this process: always healthy (`detail` says whose), each vend answered by `fire` (delivered unless told otherwise). */
export function testMachine(detail: string, fire: Actuator['fire'] = async () => ({ result: 'vended' })): Actuator {
  return { kind: 'sim', async start() {}, async stop() {}, health: () => ({ ok: true, detail }), fire };
}

/** The money path on a real SQLite file with a scriptable provider and a manual clock. */
export function buildCore(overrides: Parameters<typeof testSettings>[1] = {}) {
  const dir = tempDir();
  const settings = testSettings(dir.path, overrides);
  const clock = createManualClock();
  const logger = silentLogger();
  const fake = createFakeProvider({ livemode: settings.device.livemode, now: clock.now });
  const outOfService = new Map<string, string>();
  // A machine that always delivers and remembers what it was asked: the physical truth of a core test.
  const fired: VendRequest[] = [];
  const machine = testMachine('core test machine', async (request) => {
    fired.push(request);
    return { result: 'vended' };
  });
  const { db, outbox, orderRepository, health, money } = composeMoneyPath({
    settings,
    clock,
    logger,
    provider: fake.provider,
    actuator: machine,
    outOfService: () => (outOfService.size ? [...outOfService.values()].join('; ') : null),
  });
  const { ledger, orders } = money;
  return {
    dir,
    settings,
    clock,
    logger,
    db,
    outbox,
    orderRepository,
    fake,
    ledger,
    health,
    orders,
    outOfService,
    money,
    fired,
    close() {
      db.close();
      dir.cleanup();
    },
    /** Observes the fake provider's current view of an invoice through the ledger, as the channels do. */
    async observe(invoiceId: string, channel: 'poll' | 'webhook' = 'poll') {
      return ledger.observe(observationOf(await fake.provider.getInvoice(invoiceId), channel));
    },
    count(sql: string, ...params: unknown[]): number {
      return (db.prepare(sql).get(...params) as { n: number }).n;
    },
  };
}

export type Core = ReturnType<typeof buildCore>;

/** The core's parts that the vend runner and the refund worker take: its store, clock, log, outbox, orders, fake provider and ledger. */
export function moneyPathDeps(core: Core) {
  return {
    db: core.db,
    clock: core.clock,
    logger: core.logger,
    outbox: core.outbox,
    orderRepository: core.orderRepository,
    provider: core.fake.provider,
    ledger: core.ledger,
  };
}

/** A kiosk order for `slot` whose invoice the provider reports as `status`, observed through the ledger as a poll does. */
export async function observedOrder(core: Core, status: Parameters<Core['fake']['set']>[1], slot = 'A1') {
  const order = await core.orders.create({ source: 'kiosk', slot });
  core.fake.set(order.invoice_id!, status);
  await core.observe(order.invoice_id!);
  return order;
}

/**
 * A vend runner on the core's money path whose machine answers every vend with `outcome` (a jam, a
 * silence): the physical truth of a test that needs vends that fail or go unanswered.
 */
export function runnerAnswering(core: Core, outcome: Awaited<ReturnType<Actuator['fire']>>) {
  return createVendRunner(
    {
      ...moneyPathDeps(core),
      actuator: testMachine('test machine', async () => outcome),
    },
    { mode: 'vending', vendTimeoutMs: 2_000, notPassedPolicy: 'refund' },
  );
}

/** For a describe: before each test a fresh core (built with `overrides`) handed to `use`; after it, that core closed. */
export function corePerTest(use: (core: Core) => void, overrides: Parameters<typeof buildCore>[0] = {}): void {
  let core: Core | undefined;
  beforeEach(() => use((core = buildCore(overrides))));
  afterEach(() => core?.close());
}

/**
 * For a describe whose code schedules with setTimeout: before each test, setTimeout and
 * clearTimeout faked and a fresh core handed to `use`; after it, the timers real again and the
 * core closed.
 */
export function coreOnFakeTimeouts(use: (core: Core) => void): void {
  let core: Core | undefined;
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    use((core = buildCore()));
  });
  afterEach(() => {
    vi.useRealTimers();
    core?.close();
  });
}
