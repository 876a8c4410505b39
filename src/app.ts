import { existsSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Settings } from './settings/index.js';
import {
  openDatabase,
  databaseId,
  assessLineage,
  refineLineage,
  settleLineage,
  lineageHeadline,
  machineIdentity,
  recordLineage,
  createRetention,
  createCheckpointer,
  inTransaction,
  acquireInstanceLock,
  createStorageHealth,
  touchDatabase,
  inspectWal,
  keepDiscardedWal,
  freeBytesAt,
  ballastPathFor,
  recordRunningService,
  type StorageHealth,
  type Checkpointer,
  type Db,
  type InstanceLock,
  type LineageFinding,
} from './store/index.js';
import { bindListener, listenerLimits, type BoundListener } from './util/http-listener.js';
import { systemClock, type Clock } from './util/clock.js';
import { createLifecycle, type Lifecycle, type Owner } from './util/lifecycle.js';
import { createLogger, type Logger } from './util/logger.js';
import { createOutbox, type Outbox } from './outbox/index.js';
import type { Ledger } from './ledger/index.js';
import { createMoneyPath, type MoneyPath } from './money/index.js';
import {
  createOrderRepository,
  createProviderHealth,
  salesFigures,
  type OrderRepository,
  type OrderService,
  type ProviderHealth,
} from './orders/index.js';
import type { VendRunner, RefundWorker } from './vend/index.js';
import { createActuator, createInputs, preflightHardware, type Actuator, type HardwareInputs } from './hardware/index.js';
import { createProvider, type PaymentProvider } from './payments/index.js';
import type { SandboxProvider } from './payments/sandbox/index.js';
import { createPoller, type Poller } from './channels/poller.js';
import { readProviderLineage } from './channels/lineage-probe.js';
import {
  createClockSkewAlarm,
  createWebhookChannel,
  referencedInvoicesIn,
  refundsSeenIn,
  refundClaimPendingIn,
  withRefundEvidence,
  type ClockSkew,
  type WebhookChannel,
} from './channels/webhook/index.js';
import { createKioskServer, type KioskService } from './kiosk/index.js';
import { createServiceMenu } from './device/service-menu.js';
import { createMetrics, type Metrics } from './metrics/index.js';
import { createMqtt, createBrokerWebhookSubscription, type Mqtt, type BrokerWebhookSubscription } from './mqtt/index.js';
import {
  createAvailability,
  createDeviceControl,
  createDeviceView,
  createHardwareEventHandler,
  createStateChanges,
  followStorageFaults,
  type Availability,
  type DeviceView,
  type StateChanges,
} from './device/index.js';
import { createCatalog, type Catalog } from './catalog/index.js';
import { dexServiceFor, startDexSchedule, type DexAudit } from './dex/index.js';
import { createFiscal, createRegister, type Fiscal } from './fiscal/index.js';
import { createCaseSettlement } from './ledger/index.js';

export interface AppDeps {
  clock?: Clock;
  logger?: Logger;
  /** Replaces the provider named in the settings (tests). */
  provider?: PaymentProvider;
  /** Replaces the actuator named in the settings (tests). */
  actuator?: Actuator;
  /** Replaces the inputs named in the settings (tests). */
  inputs?: HardwareInputs;
  /** The settings file this app was built from and the environment variables that contributed (names only). */
  configSource?: string;
  configEnvironment?: string[];
  /** Test-only: named points at which the process kills itself (crash tests). */
  crashPoint?: (name: string) => void;
  /**
   * Test-only: told the name of each step of start() before it runs; a throw there fails the start
   * at that step (test/app/failed-start.test.ts injects a fault at every one).
   */
  faultAt?: (step: string) => void;
  /**
   * Test-only: shorter waits for the background retries whose timing is no setting, so that a test
   * of the real app sees an outage end in milliseconds rather than seconds. Absent: the defaults
   * (the Events API catch-up retries after 5 s, doubling; a storage fault is rechecked every 2 s).
   */
  retryTimings?: { backfillRetryBaseMs?: number; storageRecheckMs?: number };
}

/** Everything start() built, for the CLI, the selftest and tests. */
export interface AppContext {
  settings: Readonly<Settings>;
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
  ledger: Ledger;
  provider: PaymentProvider;
  sandbox: SandboxProvider | null;
  health: ProviderHealth;
  orders: OrderService;
  vend: VendRunner;
  refunds: RefundWorker;
  poller: Poller;
  webhooks: WebhookChannel;
  mqtt: Mqtt;
  actuator: Actuator;
  inputs: HardwareInputs;
  view: DeviceView;
  catalog: Catalog;
  /** Fiscal receipts; null with `fiscal.register: none`. */
  fiscal: Fiscal | null;
}

export interface App {
  start(): Promise<{ localUrl: string }>;
  stop(): Promise<void>;
  context(): AppContext;
}

// The parts of the service, in the order start() builds them (ARCHITECTURE.md, "Start and stop
// order"). Each build function takes the parts built before it and nothing else, so a part can only
// use what already exists; start() below is the table of contents.

/** What every part is built with. */
interface Base {
  settings: Readonly<Settings>;
  deps: AppDeps;
  clock: Clock;
  logger: Logger;
  /** The app's own log lines. */
  log: Logger;
}

/** The instance lock and both listener ports, claimed before the database exists. */
interface Claimed {
  lock: InstanceLock;
  local: BoundListener;
  webhook: BoundListener;
}

/**
 * A second service on this database stops at the lock, having changed nothing; a port in use stops
 * at its bind, before the database is opened. Each is owned as soon as it is claimed, so a failure
 * after it gives it back.
 */
async function claimLockAndPorts({ settings }: Base, owner: Owner): Promise<Claimed> {
  const lock = acquireInstanceLock(settings.storage.path);
  owner.own('store', 'instance lock', () => lock.release());
  const { local, webhook } = settings.http;
  const localPort = await bindListener({ host: local.host, port: local.port, portSetting: 'http.local.port' }, listenerLimits(local));
  // The kiosk closes it when it served; this closes it when the start ended before (safe twice).
  owner.own('intake', 'local port', () => localPort.close());
  // Fleet mode without a tunnel: the listener stays for health and local checks, unreachable from outside.
  const webhookHost = settings.fleet.webhookSource === 'broker' ? '127.0.0.1' : webhook.host;
  const webhookPort = await bindListener(
    { host: webhookHost, port: webhook.port, portSetting: 'http.webhook.port' },
    listenerLimits(webhook),
  );
  owner.own('intake', 'webhook port', () => webhookPort.close());
  return { lock, local: localPort, webhook: webhookPort };
}

/** The database and what lives in it: lineage, WAL checkpoints, the outbox, the one order repository. */
interface Store {
  db: Db;
  dbId: string;
  /** What the start made of the database: the local marks' verdict, then the provider's records added (settleStore). */
  lineage: LineageFinding;
  /** The side mark follows the checkpoints only once the verdict is recorded: until then it is evidence. */
  lineageMark: { highWater: number; settled: boolean };
  checkpointer: Checkpointer;
  outbox: Outbox;
  /** The process's only order repository: every part that reads or moves orders gets this one. */
  orderRepository: OrderRepository;
  /** The card beneath the database: a refused write is a state (src/store/storage-health.ts), not a crash. */
  storage: StorageHealth;
  /** One clock-skew state, fed by verified webhooks and by the Date header of every provider answer. */
  clockSkew: ClockSkew;
}

/**
 * A disk too full to start on, with the ballast still there: it is given back (storage.report does,
 * src/store/storage-health.ts) and the service starts in the `full` state, refusing new orders but
 * settling what it holds and telling the operator. Without a ballast the start fails (exit 74).
 */
function startsOnFullDisk(path: string): boolean {
  const free = freeBytesAt(dirname(path));
  if (free === null || free >= 1024 * 1024 || !existsSync(ballastPathFor(path))) return false;
  rmSync(ballastPathFor(path), { force: true });
  return true;
}

function openStore({ settings, deps, clock, logger, log }: Base, owner: Owner, fullAtStart: boolean): Store {
  const onDisk = settings.storage.path !== ':memory:';
  // Looked at before SQLite opens it: a WAL it would discard silently takes the restored-database path.
  const wal = onDisk ? inspectWal(settings.storage.path) : null;
  if (wal?.discarded)
    log.error(
      { wal: wal.path, bytes: wal.bytes, reason: wal.discarded, copy: keepDiscardedWal(wal, clock.now()) },
      'the write-ahead log is unreadable: SQLite discards it',
    );
  const db = openDatabase(settings.storage.path);
  // Closed last of the store's parts: the checkpointer and the lineage mark (owned below) write to it first.
  owner.own('store', 'database', () => {
    db.close();
  });
  const dbId = databaseId(db);
  const storage = createStorageHealth(
    {
      now: () => clock.now(),
      probeDatabase: () => touchDatabase(db, clock.now()),
      onLog: (level, fields, msg) => log[level](fields, msg),
    },
    {
      path: settings.storage.path,
      ballastBytes: onDisk ? settings.storage.ballastMb * 1024 * 1024 : 0,
      recheckMs: deps.retryTimings?.storageRecheckMs,
    },
  );
  if (fullAtStart) storage.report(Object.assign(new Error('no room left on the disk at start'), { code: 'ENOSPC' }));
  else if (onDisk) storage.reserve();
  // Read before anything is written: the side mark and the marks inside the database are evidence.
  const lineage = assessLineage(db, settings.storage.path, { discardedWal: wal?.discarded });
  // WAL checkpoints between customers, not inside a webhook's or a vend claim's commit.
  const lineageMark = { highWater: lineage.highWater, settled: false };
  const checkpointer = createCheckpointer(
    { db, logger },
    {
      // A look a second (an idle device wakes for nothing 4 times a second otherwise); a quiet minute
      // checkpoints only once 500 rows changed (about a dozen orders): customers minutes apart share
      // one checkpoint instead of paying three syncs each (scripts/bench/fsync.mjs).
      intervalMs: 1_000,
      quietMs: 60_000,
      quietMinChanges: 500,
      onCheckpoint: () => {
        if (lineageMark.settled) recordLineage(db, settings.storage.path, lineageMark);
      },
    },
  );
  checkpointer.start();
  owner.own('store', 'checkpointer, storage health and the lineage mark', () => {
    storage.stop();
    checkpointer.stop();
    // This run ended cleanly: the side mark says so (only once the start recorded its verdict).
    try {
      if (lineageMark.settled) recordLineage(db, settings.storage.path, { highWater: -1 });
    } catch (err) {
      log.warn({ err }, 'could not write the lineage mark beside the database');
    }
  });
  const outbox = createOutbox({ db, clock, deviceId: settings.device.id });
  const clockSkew = createClockSkewAlarm({ db, outbox, logger }, { toleranceSec: settings.provider.toleranceSec });
  return {
    db,
    dbId,
    lineage,
    lineageMark,
    checkpointer,
    outbox,
    orderRepository: createOrderRepository({ db, clock }),
    storage,
    clockSkew,
  };
}

/**
 * The start's verdict on the database, before recovery moves anything: the local marks (side mark,
 * marks inside the database, a `vendgate db` record), then the provider's records of this device
 * (src/channels/lineage-probe.ts), recorded in the database and beside it, said in one log line,
 * and raised as `database_restored` / `database_replaced` (`database_cloned` for another machine).
 */
async function settleStore({ settings, clock, log }: Base, store: Store, { provider }: Payments): Promise<void> {
  const { db, outbox } = store;
  const remote = await readProviderLineage(provider, {
    deviceId: settings.device.id,
    dbId: store.dbId,
    sinceSec: Math.floor(clock.now() / 1000) - settings.http.webhook.backfillLookbackSec,
    timeoutMs: 5_000,
  });
  const lineage = settleLineage(db, settings.storage.path, refineLineage(store.lineage, remote), {
    now: clock.now(),
    machine: machineIdentity(),
  });
  store.lineage = lineage;
  store.lineageMark.highWater = lineage.highWater;
  store.lineageMark.settled = true;
  const fields = {
    lineage: lineage.kind,
    dbId: store.dbId,
    source: lineage.source,
    providerRecords: remote === null ? 'not read' : remote,
    ...(lineage.behind ? { behind: lineage.behind } : {}),
    ...(lineage.previousDbId ? { previousDbId: lineage.previousDbId } : {}),
    ...(lineage.cloned ? { cloned: true } : {}),
    orders: lineage.marks.orders,
    events: lineage.marks.events,
    ...(lineage.detail ? { detail: lineage.detail } : {}),
  };
  if (!lineage.detail) {
    log.info(fields, lineageHeadline(lineage));
    return;
  }
  // Order ids restart in a restored database; references do not (a nonce per order), so no old
  // key is reused. Said loudly, and every recent invoice is compared with the provider at once.
  log.warn(fields, lineageHeadline(lineage));
  const name = lineage.replaced ? 'database_replaced' : lineage.restored ? 'database_restored' : 'database_cloned';
  inTransaction(db, () => {
    outbox.raiseAlarm(
      name,
      lineage.replaced ? 'critical' : 'warning',
      `${lineage.detail}; recent invoices are being reconciled with the provider`,
      {
        lineage: lineage.kind,
        source: lineage.source,
        behind: lineage.behind,
        previousDbId: lineage.previousDbId,
        highWater: lineage.highWater,
      },
    );
    outbox.event('database.restored', {
      lineage: lineage.kind,
      restored: lineage.restored,
      replaced: lineage.replaced,
      cloned: lineage.cloned,
      detail: lineage.detail,
    });
  });
}

/** What the other parts report to: catalog, provider health, metrics, availability, who follows the state. */
interface Shared {
  catalog: Catalog;
  health: ProviderHealth;
  metrics: Metrics;
  availability: Availability;
  /** Every state change: the screen's event stream, MQTT, and the poller (a new order's invoice) follow it. */
  changes: StateChanges;
}

function buildShared({ settings, clock, logger }: Base, { db, outbox }: Store): Shared {
  const catalog = createCatalog({ db, clock, logger, outbox }, settings);
  const health = createProviderHealth(clock);
  const metrics = createMetrics({ provider: settings.provider.name });
  const availability = createAvailability();
  const changes = createStateChanges();
  availability.subscribe(changes.notify);
  // The screen goes offline and back with the provider: its followers hear it.
  health.onChange(changes.notify);
  return { catalog, health, metrics, availability, changes };
}

/** The payment provider: injected (tests), the sandbox (demo), or the real one named in the settings. */
interface Payments {
  provider: PaymentProvider;
  sandbox: SandboxProvider | null;
  /** Demo: the sandbox's pay page on this machine's LAN address (provider.sandboxLanPort). */
  lan: { address: string | null; port: number } | null;
  webhookSecrets: readonly string[];
}

async function buildPayments(
  { settings, deps, clock, logger, log }: Base,
  { db, clockSkew }: Store,
  { metrics, health }: Shared,
  claimed: Claimed,
  owner: Owner,
): Promise<Payments> {
  // The sandbox (the demo's provider) and its LAN pay page are loaded only when configured.
  const demo = !deps.provider && settings.provider.name === 'sandbox';
  const host = settings.http.local.host === '0.0.0.0' ? '127.0.0.1' : settings.http.local.host;
  const localBase = `http://${host}:${claimed.local.port}`;
  // Demo: with provider.sandboxLanPort the pay URL (and so the QR) names this machine's LAN address.
  const lan =
    settings.provider.name === 'sandbox' && settings.provider.sandboxLanPort > 0
      ? {
          address: settings.provider.sandboxLanAddress ?? (await import('./kiosk/sandbox-lan.js')).lanAddress(),
          port: settings.provider.sandboxLanPort,
        }
      : null;
  if (lan && !lan.address) log.warn({}, 'provider.sandboxLanPort is set but this machine has no LAN address: pay URLs stay on 127.0.0.1');
  const payBase = lan?.address ? `http://${lan.address.includes(':') ? `[${lan.address}]` : lan.address}:${lan.port}` : localBase;
  const sandboxModule = demo ? await import('./payments/sandbox/index.js') : null;
  const sandbox = sandboxModule
    ? sandboxModule.createSandboxProvider(
        { clock, logger },
        {
          dbPath: sandboxModule.sandboxDbPath(settings.storage.path),
          payUrl: (id) => `${payBase}/sandbox/pay/${id}`,
          webhookSecret: settings.provider.webhookSecrets[0] ?? 'sandbox-webhook-secret',
        },
      )
    : null;
  if (sandbox) owner.own('store', 'sandbox provider', () => sandbox.close());
  // Every reading adds the refunds seen as verified events (a Gerege intent does not say it was refunded).
  const provider = withRefundEvidence(
    deps.provider ??
      sandbox?.provider ??
      (await createProvider(
        {
          clock,
          logger,
          observeRequest: (sample) => {
            metrics.observeProviderRequest(sample);
            if (sample.serverDate !== undefined && sample.receivedAt !== undefined)
              clockSkew.observe(Math.round((sample.receivedAt - sample.serverDate) / 1000));
          },
          // Provider health hears every call's outcome from the HTTP client, whoever made the call.
          onCall: (outcome) => health.heard(outcome),
        },
        settings,
      )),
    refundsSeenIn(db),
    refundClaimPendingIn(db),
  );
  const webhookSecrets =
    settings.provider.webhookSecrets.length > 0 || !sandbox ? settings.provider.webhookSecrets : ['sandbox-webhook-secret'];
  return { provider, sandbox, lan, webhookSecrets };
}

/** The actuator and the inputs: built here, started by recovery and after it. */
interface Hardware {
  actuator: Actuator;
  inputs: HardwareInputs;
}

async function buildHardware({ settings, deps, clock, logger }: Base, { catalog }: Shared, owner: Owner): Promise<Hardware> {
  const actuator =
    deps.actuator ?? (await createActuator({ clock, logger, knownItems: { has: (item) => catalog.item(item) !== undefined } }, settings));
  // Started (and put in its safe state) by recovery; stopped to its safe state after the money path drained.
  owner.own('outputs', 'actuator', () => actuator.stop());
  const inputs = deps.inputs ?? (await createInputs({ clock, logger }, settings));
  owner.own('intake', 'inputs', () => inputs.stop());
  return { actuator, inputs };
}

/**
 * Fiscal receipts (src/fiscal/): the register the settings name and the worker that issues each
 * receipt once; null with `fiscal.register: none`. After too long without receipts (if set) it
 * stops new orders through the availability.
 */
async function buildFiscal(
  { settings, deps, clock, logger }: Base,
  { db, outbox }: Store,
  { availability, changes }: Shared,
  owner: Owner,
): Promise<Fiscal | null> {
  const register = await createRegister(settings, { clock, logger });
  if (!register) return null;
  let fiscal: Fiscal | null = null;
  // After the money path: a refund completed while stopping has written its receipt row. The
  // worker's stop records the register call in flight and closes the register.
  owner.own('drain', 'fiscal receipts', () => (fiscal ? fiscal.stop() : register.close?.()));
  fiscal = createFiscal(
    {
      db,
      clock,
      logger,
      outbox,
      register,
      stopSales: (detail) => (detail ? availability.set('fiscal', detail) : availability.clear('fiscal')),
      onChange: changes.notify,
      ...(deps.crashPoint ? { crashPoint: deps.crashPoint } : {}),
    },
    settings.fiscal,
  );
  return fiscal;
}

/** The money path, composed once (src/money/): ledger, orders, vend jobs, refunds, reconciliation. */
function buildMoneyPath(
  base: Base,
  store: Store,
  shared: Shared,
  { provider }: Payments,
  { actuator }: Hardware,
  fiscal: Fiscal | null,
  owner: Owner,
): MoneyPath {
  const { settings, deps, clock, logger } = base;
  const { catalog, metrics, changes } = shared;
  const seen = { catalogGeneration: catalog.generation() };
  const money = createMoneyPath(
    {
      db: store.db,
      clock,
      logger,
      outbox: store.outbox,
      orderRepository: store.orderRepository,
      provider,
      actuator,
      health: shared.health,
      catalog,
      outOfService: shared.availability.reason,
      storage: store.storage,
      events: {
        changed: changes.notify,
        vendSettled: (order, result) => {
          if (order.paid_at !== null) metrics.observeVend(result, (clock.now() - order.paid_at) / 1000);
        },
        closedUnpaid: (order, reason) => {
          if (order.source === 'mdb') void actuator.denySession?.(reason);
        },
        // A refill, cleared jam or rollback by the CLI (another process) reaches the screen within a tick.
        tick: () => {
          const generation = catalog.generation();
          if (generation === seen.catalogGeneration) return;
          seen.catalogGeneration = generation;
          changes.notify();
        },
      },
      hooks: { crashPoint: deps.crashPoint },
      orphanCandidates: referencedInvoicesIn(store.db),
      ...(fiscal ? { receipts: fiscal.receipts } : {}),
    },
    settings,
  );
  // The vend in progress and the refund in flight finish (their answers recorded).
  owner.own('drain', 'money path', () => money.stop());
  return money;
}

/** How payments reach the money path: webhooks (tunnel, or the relay over the broker) and polling. */
interface Channels {
  webhooks: WebhookChannel;
  poller: Poller;
  /** Fleet mode: the relay's webhooks for this device, from its persistent broker session. */
  brokerWebhooks: BrokerWebhookSubscription | null;
}

function buildChannels(
  { settings, deps, clock, logger, log }: Base,
  store: Store,
  { health, changes }: Shared,
  { provider, sandbox, webhookSecrets }: Payments,
  { ledger }: MoneyPath,
  claimed: Claimed,
  owner: Owner,
): Channels {
  const { db, outbox, dbId } = store;
  const webhooks = createWebhookChannel(
    {
      db,
      clock,
      logger,
      provider,
      ledger,
      outbox,
      orderRepository: store.orderRepository,
      secrets: webhookSecrets,
      listener: claimed.webhook,
      storage: store.storage,
      clockSkew: store.clockSkew,
    },
    {
      ...settings.http.webhook,
      toleranceSec: settings.provider.toleranceSec,
      backfillRetryBaseMs: deps.retryTimings?.backfillRetryBaseMs,
    },
  );
  const poller = createPoller(
    {
      db,
      clock,
      logger,
      provider,
      ledger,
      health,
      orderRepository: store.orderRepository,
      webhooksUntrusted: () => store.clockSkew.webhooksUntrusted(),
      // The poller found money first: if no webhook follows, the tunnel may be down (backfill, alarm).
      onObserved: (observation, result) => {
        if (result.outcome === 'recorded' && (observation.status === 'paid' || observation.status === 'authorized'))
          webhooks.paymentPolled(observation.invoiceId);
      },
    },
    settings.poll,
  );
  // Closers run newest first: the webhooks stop, then the poller.
  owner.own('intake', 'poller', () => poller.stop());
  owner.own('intake', 'webhooks', () => webhooks.stop());
  // A state change may have opened an invoice (a new order): an idle poller reads it at its next short tick.
  changes.subscribe(() => poller.wake());
  const brokerWebhooks =
    settings.fleet.webhookSource === 'tunnel'
      ? null
      : createBrokerWebhookSubscription(
          {
            clock,
            logger,
            deviceId: settings.device.id,
            provider: provider.name,
            referencePrefixes: [`${settings.device.id}-${dbId}-`],
            ingest: (delivery) => webhooks.ingestFromBroker(delivery),
          },
          settings.mqtt,
        );
  if (brokerWebhooks) owner.own('intake', "the broker's webhooks", () => brokerWebhooks.stop());
  sandbox?.onDelivery((delivery) => webhooks.deliverLocally(delivery));
  // After an outage of the provider every unsettled invoice is read again and the Events API is
  // read from the last event seen: a payment made meanwhile is found whatever its webhook did.
  health.onRecovered(() => {
    log.info('payment provider reachable again: reading every unsettled invoice and the events missed');
    poller.pollAllNow();
    void webhooks.backfill.run('provider reachable again').catch(() => {});
  });
  return { webhooks, poller, brokerWebhooks };
}

/** The device beyond payments: the screen's view, the operator's controls over MQTT. */
interface Device {
  view: DeviceView;
  mqtt: Mqtt;
  service: KioskService;
  /** The audit: `cmd/dex`, `cmd/visit` and the scheduled reads share it. */
  audit: DexAudit;
}

function buildDevice(
  { settings, deps, clock, logger }: Base,
  startedAt: number,
  { db, outbox, storage, orderRepository }: Store,
  { catalog, health, metrics, availability, changes }: Shared,
  { provider }: Payments,
  { actuator, inputs }: Hardware,
  { orders, vend, refunds }: MoneyPath,
  { poller }: Channels,
  fiscal: Fiscal | null,
  served: Served,
  owner: Owner,
): Device {
  const notify = changes.notify;
  const view = createDeviceView({
    settings,
    clock,
    orders,
    health,
    availability,
    outbox,
    poller,
    startedAt,
    changes,
    catalog,
    notify,
    metrics,
    storage,
    sessionStyle: () => actuator.sessionStyle?.() ?? null,
    sales: () => salesFigures(db, settings.device.currency, clock.now()),
    ...(fiscal ? { fiscal } : {}),
  });
  const dex = dexServiceFor(settings, { db, clock, outbox, catalog });
  const control = createDeviceControl({
    device: settings.device,
    dex,
    db,
    logger,
    outbox,
    availability,
    orders,
    vend,
    refunds,
    cases: createCaseSettlement({ db, clock, logger, outbox, provider, orders: orderRepository }),
    catalog,
    view,
    changes,
    notify,
    selftest: {
      settings,
      clock,
      live: { db, provider, actuator, inputs, storage, ...(fiscal ? { fiscal: fiscal.register } : {}) },
      urls: () => served.urls,
      source: deps.configSource ?? '(in memory)',
      environment: deps.configEnvironment ?? [],
    },
  });
  const mqtt = createMqtt(
    { db, outbox, clock, logger, deviceId: settings.device.id, control, commands: settings.commands, storage },
    settings.mqtt,
  );
  // Connected by goLive; its stop publishes offline (the last will's twin) once the hardware is safe.
  owner.own('telemetry', 'MQTT', () => mqtt.stop());
  // Every state change may have written outbox rows: published now, not at the next poll.
  changes.subscribe(() => mqtt.kick());
  const service = createServiceMenu({
    settings,
    orders,
    outbox,
    catalog,
    control,
    sales: () => salesFigures(db, settings.device.currency, clock.now()),
  });
  return { view, mqtt, service, audit: dex.audit };
}

/** Recovery before anything new is accepted (uncertain vends, unknown refunds, half-created orders), then the inputs. */
async function recover(
  { logger, log }: Base,
  { db, outbox, lineage, orderRepository }: Store,
  { availability, changes }: Shared,
  { actuator, inputs }: Hardware,
  money: MoneyPath,
  { webhooks }: Channels,
  fiscal: Fiscal | null,
): Promise<void> {
  // A waiting order is read at recovery; the refunds made meanwhile are only seen as events
  // (Gerege), so the Events API goes into the inbox first (the worker processes it once started).
  if (orderRepository.inStates(['creating', 'awaiting_payment']).length > 0) await webhooks.backfill.run('before recovery').catch(() => {});
  // The actuator is started and put in its safe state inside money.recover().
  // A replaced database carries the restored boundary too (settleLineage): its queued vends are parked alike.
  const recovered = await money.recover({ restored: lineage.restored || lineage.replaced });
  // A receipt left mid-call has an unknown outcome: the register is asked about it before any retry.
  fiscal?.recover();
  if (recovered.uncertain.length || recovered.settled.length || recovered.refundsUnknown)
    log.warn(recovered, 'recovered from an interrupted run');
  inputs.on(createHardwareEventHandler({ db, logger, outbox, orders: money.orders, availability, actuator, notify: changes.notify }));
  await inputs.start();
}

/** Where the listeners serve, filled in once they do: for the selftest (over MQTT, so only asked once both are set). */
interface Served {
  urls: { local?: string; webhook?: string };
}

/** Kiosk (and in the demo the sandbox's LAN pay page), then webhooks; requests before this got 503. */
async function serve(
  { settings, clock, logger }: Base,
  claimed: Claimed,
  { sandbox, lan }: Payments,
  { webhooks }: Channels,
  { view, service }: Device,
  served: Served,
  owner: Owner,
): Promise<{ local: string; webhook: string }> {
  const sandboxLan =
    lan?.address && sandbox
      ? (await import('./kiosk/sandbox-lan.js')).createSandboxLanServer({ sandbox: sandbox.payments, clock, logger }, { port: lan.port })
      : null;
  if (sandboxLan) owner.own('intake', 'sandbox LAN pay page', () => sandboxLan.stop());
  const kiosk = createKioskServer(
    { ...view.kioskDeps(sandbox?.payments), service, logger, clock, listener: claimed.local },
    settings.http.local,
  );
  // Owned after the pay page, so stopped before it: the kiosk takes no new order first.
  owner.own('intake', 'kiosk', () => kiosk.stop());
  const listening = await kiosk.start();
  await sandboxLan?.start();
  const webhookListening = await webhooks.start();
  const urls = { local: listening.url, webhook: webhookListening.url };
  served.urls = urls;
  return urls;
}

/** Where this process listens, for a selftest run beside it (it may have been started with --local-port). */
function noteListeners({ clock, log }: Base, { db }: Store, urls: { local: string; webhook: string }): void {
  try {
    recordRunningService(db, { pid: process.pid, at: new Date(clock.now()).toISOString(), ...urls });
  } catch (err) {
    log.warn({ err }, 'could not note the listeners for the selftest');
  }
}

/** MQTT connects (in the background), then the broker subscription, polling and the money path's timers. */
async function goLive(
  { log }: Base,
  { lineage, storage }: Store,
  money: MoneyPath,
  channels: Channels,
  { mqtt }: Device,
  fiscal: Fiscal | null,
): Promise<void> {
  // Connects in the background: a broker that is down never holds up the money path.
  await mqtt.start();
  channels.brokerWebhooks?.start();
  channels.poller.start();
  money.start();
  // The sweep at start ran while the start-up Events API read may still have been going: an orphan
  // only that read shows (its webhook never came) is settled once it is in, not a reconcile pass later.
  void channels.webhooks.backfill
    .caughtUp()
    .then(() => money.reconciler.sweepOrphans())
    .catch((err) => log.error({ err }, 'orphan sweep failed'));
  fiscal?.start();
  storage.start();
  if (lineage.detail) {
    money.reconciler.compareAllAgain();
    void money.reconciler.run().catch((err) => log.error({ err }, 'reconcile pass failed'));
  }
}

function contextOf(
  { settings, clock, logger }: Base,
  { db, outbox }: Store,
  { health, catalog }: Shared,
  { provider, sandbox }: Payments,
  { actuator, inputs }: Hardware,
  { ledger, orders, vend, refunds }: MoneyPath,
  { poller, webhooks }: Channels,
  { view, mqtt }: Device,
  fiscal: Fiscal | null,
): AppContext {
  return {
    settings,
    db,
    clock,
    logger,
    outbox,
    ledger,
    provider,
    sandbox,
    health,
    orders,
    vend,
    refunds,
    poller,
    webhooks,
    mqtt,
    actuator,
    inputs,
    view,
    catalog,
    fiscal,
  };
}

/** Builds the service from settings. Nothing happens until start(); stop() is safe to call twice. */
export function createApp(settings: Readonly<Settings>, deps: AppDeps = {}): App {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger({ level: settings.log.level });
  const base: Base = { settings, deps, clock, logger, log: logger.child({ module: 'app' }) };
  const { log } = base;
  /** What this start built, each part's closer registered as it was built (src/util/lifecycle.ts). */
  let life: Lifecycle | null = null;
  let starting: Promise<unknown> | null = null;
  let started = false;
  let context: AppContext | null = null;
  let stopping: Promise<void> | null = null;

  /**
   * The table of contents: each step takes the parts built before it, and every part that holds
   * something (a file, a port, a timer, a connection) registers its closer with `owner` the moment
   * it holds it. A step that fails closes what was built, phase by phase, and the start fails.
   */
  async function build(owner: Lifecycle): Promise<{ localUrl: string }> {
    const { step } = owner;
    const startedAt = clock.now();
    // Hardware the settings name but this machine lacks stops the start here, before the lock or the database.
    await step('preflightHardware', () => preflightHardware({}, settings, { actuator: !deps.actuator, inputs: !deps.inputs }));
    // A full disk with its ballast still there: the ballast is given back and the start goes on, full.
    const fullAtStart = await step('freeTheBallast', () => settings.storage.path !== ':memory:' && startsOnFullDisk(settings.storage.path));
    const claimed = await step('claimLockAndPorts', () => claimLockAndPorts(base, owner));
    const store = await step('openStore', () => openStore(base, owner, fullAtStart));
    const shared = await step('buildShared', () => buildShared(base, store));
    await step('followStorageFaults', () => {
      const storageAlarms = followStorageFaults({
        db: store.db,
        outbox: store.outbox,
        storage: store.storage,
        logger,
        availability: shared.availability,
        notify: shared.changes.notify,
      });
      owner.own('telemetry', 'storage alarms', () => storageAlarms.stop());
    });
    const payments = await step('buildPayments', () => buildPayments(base, store, shared, claimed, owner));
    const hardware = await step('buildHardware', () => buildHardware(base, shared, owner));
    const fiscal = await step('buildFiscal', () => buildFiscal(base, store, shared, owner));
    const money = await step('buildMoneyPath', () => buildMoneyPath(base, store, shared, payments, hardware, fiscal, owner));
    const channels = await step('buildChannels', () => buildChannels(base, store, shared, payments, money, claimed, owner));
    const served: Served = { urls: {} };
    const device = await step('buildDevice', () =>
      buildDevice(base, startedAt, store, shared, payments, hardware, money, channels, fiscal, served, owner),
    );
    context = contextOf(base, store, shared, payments, hardware, money, channels, device, fiscal);
    // The applied catalog version, retained, on every start: the fleet sees desired vs applied even if the broker lost it.
    shared.catalog.announce();

    await step('settleStore', () => settleStore(base, store, payments));
    await step('recover', () => recover(base, store, shared, hardware, money, channels, fiscal));
    const urls = await step('serve', () => serve(base, claimed, payments, channels, device, served, owner));
    await step('noteListeners', () => noteListeners(base, store, urls));
    await step('goLive', () => goLive(base, store, money, channels, device, fiscal));
    // One read at once, whatever is open: the provider's reachability (/healthz, the screen) and its
    // clock (the clock_skew alarm, from the answer's Date header) are known from the start.
    // Provider health hears the answer from the HTTP client (onCall).
    void payments.provider.checkCredentials().catch(() => {});
    // Old finished orders and webhook bodies go in small batches, well after start-up.
    await step('retention', () => {
      const retention = createRetention({ db: store.db, clock, logger }, { retentionDays: settings.storage.retentionDays });
      owner.own('intake', 'retention', () => retention.stop());
      retention.start();
    });
    // Scheduled audit reads for the operator's VMS (dex.readEverySec, dex.dailyAt), if any.
    if (settings.dex.readEverySec > 0 || settings.dex.dailyAt !== '') {
      await step('dexSchedule', () => {
        const schedule = startDexSchedule({ audit: device.audit, clock, logger }, settings.dex);
        owner.own('intake', 'scheduled audit reads', () => schedule.stop());
      });
    }
    await step('ready', () => {});

    log.info(
      {
        localUrl: urls.local,
        webhookUrl: urls.webhook,
        deviceId: settings.device.id,
        provider: payments.provider.name,
        actuator: hardware.actuator.kind,
        mode: settings.device.mode,
        fiscal: settings.fiscal.register,
      },
      'vendgate ready',
    );
    return { localUrl: urls.local };
  }

  async function start(): Promise<{ localUrl: string }> {
    const owner = createLifecycle(log, deps.faultAt);
    life = owner;
    const building = build(owner);
    starting = building;
    try {
      const ready = await building;
      started = true;
      return ready;
    } catch (err) {
      // A start that fails part-way gives back what it built, in the stop's order, before it fails.
      await owner.close().catch(() => {});
      throw err;
    }
  }

  async function stopOnce(): Promise<void> {
    // A start still going ends at its next step and gives back what it built.
    life?.abort();
    await starting?.catch(() => {});
    if (!life) return;
    if (started) log.info('stopping: no new orders');
    // Phase by phase (STOP_PHASES in src/util/lifecycle.ts): intake, drain, outputs, telemetry, store.
    await life.close();
    if (started) log.info('stopped');
  }

  return {
    start,
    stop() {
      stopping ??= stopOnce();
      return stopping;
    },
    context() {
      if (!context) throw new Error('the app is not started');
      return context;
    },
  };
}
