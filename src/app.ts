import type { Settings } from './settings/index.js';
import {
  openDatabase,
  databaseId,
  checkLineage,
  recordLineage,
  createRetention,
  createCheckpointer,
  inTransaction,
  acquireInstanceLock,
  type Checkpointer,
  type Db,
  type InstanceLock,
  type Retention,
} from './store/index.js';
import { bindListener, listenerLimits, type BoundListener } from './util/http-listener.js';
import { systemClock, type Clock } from './util/clock.js';
import { createLogger, type Logger } from './util/logger.js';
import { createOutbox, type Outbox } from './outbox/index.js';
import type { Ledger } from './ledger/index.js';
import { createMoneyPath, type MoneyPath } from './money/index.js';
import { createProviderHealth, type OrderService, type ProviderHealth } from './orders/index.js';
import type { VendRunner, RefundWorker } from './vend/index.js';
import { createActuator, createInputs, type Actuator, type HardwareInputs } from './hardware/index.js';
import { createProvider, type PaymentProvider } from './payments/index.js';
import { createSandboxProvider, type SandboxProvider, sandboxDbPath } from './payments/sandbox/index.js';
import { createPoller, type Poller } from './channels/poller.js';
import { createWebhookChannel, referencedInvoicesIn, refundsSeenIn, withRefundEvidence, type WebhookChannel } from './channels/webhook/index.js';
import { createKioskServer, type KioskServer } from './kiosk/index.js';
import { createSandboxLanServer, lanAddress, type SandboxLanServer } from './kiosk/sandbox-lan.js';
import { createMetrics } from './metrics/index.js';
import { createMqtt, createBrokerWebhookSubscription, type Mqtt, type BrokerWebhookSubscription } from './mqtt/index.js';
import {
  createAvailability,
  createDeviceControl,
  createDeviceView,
  createHardwareEventHandler,
  createStateChanges,
  type DeviceView,
} from './device/index.js';
import { createCatalog, type Catalog } from './catalog/index.js';

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
}

export interface App {
  start(): Promise<{ localUrl: string }>;
  stop(): Promise<void>;
  context(): AppContext;
}

/** Builds the service from settings. Nothing happens until start(); stop() is safe to call twice. */
export function createApp(settings: Readonly<Settings>, deps: AppDeps = {}): App {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger({ level: settings.log.level });
  const log = logger.child({ module: 'app' });
  let ctx: AppContext | null = null;
  let kiosk: KioskServer | null = null;
  let sandboxLan: SandboxLanServer | null = null;
  let housekeeping: NodeJS.Timeout | null = null;
  let retention: Retention | null = null;
  let checkpointer: Checkpointer | null = null;
  let moneyPath: MoneyPath | null = null;
  let stopping: Promise<void> | null = null;
  let brokerWebhooks: BrokerWebhookSubscription | null = null;
  let instanceLock: InstanceLock | null = null;
  let bound: { local?: BoundListener; webhook?: BoundListener } = {};

  /**
   * Start order: the instance lock (a second service on this database stops here, having changed
   * nothing), then both ports (a port in use stops here, before the database exists), then the
   * database, recovery, and only then the listeners serve (requests meanwhile get 503).
   */
  async function claimLockAndPorts(): Promise<void> {
    instanceLock = acquireInstanceLock(settings.storage.path);
    const { local, webhook } = settings.http;
    bound.local = await bindListener({ host: local.host, port: local.port, portSetting: 'http.local.port' }, listenerLimits(local));
    // Fleet mode without a tunnel: the listener stays for health and local checks, unreachable from outside.
    const webhookHost = settings.fleet.webhookSource === 'broker' ? '127.0.0.1' : webhook.host;
    bound.webhook = await bindListener(
      { host: webhookHost, port: webhook.port, portSetting: 'http.webhook.port' },
      listenerLimits(webhook),
    );
  }

  async function start(): Promise<{ localUrl: string }> {
    const startedAt = clock.now();
    await claimLockAndPorts();
    const db = openDatabase(settings.storage.path);
    const dbId = databaseId(db);
    const lineage = checkLineage(db, settings.storage.path);
    // WAL checkpoints between customers, not inside a webhook's or a vend claim's commit.
    const lineageMark = { highWater: lineage.highWater };
    checkpointer = createCheckpointer(
      { db, logger },
      {
        // A look a second (an idle device wakes for nothing 4 times a second otherwise); a quiet minute
        // checkpoints only once 500 rows changed (about a dozen orders): customers minutes apart share
        // one checkpoint instead of paying three syncs each (scripts/bench/fsync.mjs).
        intervalMs: 1_000,
        quietMs: 60_000,
        quietMinChanges: 500,
        onCheckpoint: () => recordLineage(db, settings.storage.path, lineageMark),
      },
    );
    checkpointer.start();
    const outbox = createOutbox({ db, clock, deviceId: settings.device.id });
    if (lineage.detail) {
      // Order ids restart in a restored database; references do not (a nonce per order), so no old
      // key is reused. Said loudly, and every recent invoice is compared with the provider at once.
      log.warn(
        { restored: lineage.restored, cloned: lineage.cloned, detail: lineage.detail },
        'this database is not the one this machine last ran on',
      );
      inTransaction(db, () => {
        outbox.raiseAlarm(
          lineage.restored ? 'database_restored' : 'database_cloned',
          'warning',
          `${lineage.detail}; recent invoices are being reconciled with the provider`,
          { highWater: lineage.highWater },
        );
        outbox.event('database.restored', { restored: lineage.restored, cloned: lineage.cloned, detail: lineage.detail });
      });
    }
    const catalog = createCatalog({ db, clock, logger, outbox }, settings);
    const health = createProviderHealth(clock);
    const metrics = createMetrics({ provider: settings.provider.name });
    const localBase = () => `http://${settings.http.local.host === '0.0.0.0' ? '127.0.0.1' : settings.http.local.host}:${kioskPort}`;
    const kioskPort = bound.local!.port;

    let sandbox: SandboxProvider | null = null;
    let provider = deps.provider;
    // Demo: with provider.sandboxLanPort the pay URL (and so the QR) names this machine's LAN address.
    const lan =
      settings.provider.name === 'sandbox' && settings.provider.sandboxLanPort > 0
        ? { address: settings.provider.sandboxLanAddress ?? lanAddress(), port: settings.provider.sandboxLanPort }
        : null;
    if (lan && !lan.address) log.warn({}, 'provider.sandboxLanPort is set but this machine has no LAN address: pay URLs stay on 127.0.0.1');
    const payBase = () =>
      lan?.address ? `http://${lan.address.includes(':') ? `[${lan.address}]` : lan.address}:${lan.port}` : localBase();
    if (!provider && settings.provider.name === 'sandbox') {
      sandbox = createSandboxProvider(
        { clock, logger },
        {
          dbPath: sandboxDbPath(settings.storage.path),
          payUrl: (id) => `${payBase()}/sandbox/pay/${id}`,
          webhookSecret: settings.provider.webhookSecrets[0] ?? 'sandbox-webhook-secret',
        },
      );
      provider = sandbox.provider;
    }
    provider ??= createProvider({ clock, logger, observeRequest: (sample) => metrics.observeProviderRequest(sample) }, settings);
    // Every reading adds the refunds seen as verified events (a Gerege intent does not say it was refunded).
    provider = withRefundEvidence(provider, refundsSeenIn(db));

    const actuator =
      deps.actuator ?? (await createActuator({ clock, logger, knownItems: { has: (item) => catalog.item(item) !== undefined } }, settings));
    const inputs = deps.inputs ?? (await createInputs({ clock, logger }, settings));
    const availability = createAvailability();
    const changes = createStateChanges();
    let mqtt: Mqtt | null = null;
    // Every state change may have written outbox rows: publish them now, not at the next poll. It
    // may also have opened an invoice (a new order): an idle poller reads it at its next short tick.
    let wakePoller = () => {};
    const notify = () => {
      changes.notify();
      mqtt?.kick();
      wakePoller();
    };
    availability.subscribe(notify);

    let catalogGeneration = catalog.generation();
    // The money path, composed once (src/money/): ledger, orders, vend jobs, refunds, reconciliation.
    const money = createMoneyPath(
      {
        db,
        clock,
        logger,
        outbox,
        provider,
        actuator,
        health,
        deviceId: settings.device.id,
        dbId,
        outOfService: availability.reason,
        crashPoint: deps.crashPoint,
        onChange: notify,
        onSettled: (order, result) => {
          if (order.paid_at !== null) metrics.observeVend(result, (clock.now() - order.paid_at) / 1000);
        },
        catalog,
        // A refill, cleared jam or rollback by the CLI (another process) reaches the screen within a tick.
        onTick: () => {
          const generation = catalog.generation();
          if (generation !== catalogGeneration) {
            catalogGeneration = generation;
            notify();
          }
        },
        // The poller found money first: if no webhook follows, the tunnel may be down (backfill, alarm).
        onObserved: (observation) => {
          if (observation.channel === 'poll' && (observation.status === 'paid' || observation.status === 'authorized'))
            webhooks.paymentPolled(observation.invoiceId);
        },
        onClosedUnpaid: (order, reason) => {
          if (order.source === 'mdb') void actuator.denySession?.(reason);
        },
        orphanCandidates: referencedInvoicesIn(db),
      },
      settings,
    );
    const { ledger, orders, vend, refunds } = money;
    const poller = createPoller({ db, clock, logger, provider, ledger, health }, settings.poll);
    wakePoller = () => poller.wake();
    const webhookSecrets =
      settings.provider.webhookSecrets.length > 0 || !sandbox ? settings.provider.webhookSecrets : ['sandbox-webhook-secret'];
    const webhookSource = settings.fleet.webhookSource;
    const webhooks = createWebhookChannel(
      { db, clock, logger, provider, ledger, outbox, secrets: webhookSecrets, listener: bound.webhook },
      {
        ...settings.http.webhook,
        toleranceSec: settings.provider.toleranceSec,
      },
    );
    // Fleet mode: the relay's webhooks for this device, from its persistent broker session.
    brokerWebhooks =
      webhookSource === 'tunnel'
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
    sandbox?.onDelivery((delivery) => webhooks.deliverLocally(delivery));
    // After an outage of the provider every unsettled invoice is read again and the Events API is
    // read from the last event seen: a payment made meanwhile is found whatever its webhook did.
    health.onRecovered(() => {
      log.info('payment provider reachable again: reading every unsettled invoice and the events missed');
      poller.pollAllNow();
      void webhooks.backfill.run('provider reachable again').catch(() => {});
    });
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
    });

    let urls: { local?: string; webhook?: string } = {};
    mqtt = createMqtt(
      {
        db,
        outbox,
        clock,
        logger,
        deviceId: settings.device.id,
        control: createDeviceControl({
          device: settings.device,
          db,
          logger,
          outbox,
          availability,
          orders,
          vend,
          refunds,
          catalog,
          view,
          changes,
          notify,
          selftest: {
            settings,
            clock,
            live: { db, provider, actuator, inputs },
            urls: () => urls,
            source: deps.configSource ?? '(in memory)',
            environment: deps.configEnvironment ?? [],
          },
        }),
      },
      settings.mqtt,
    );
    ctx = {
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
    };
    // The applied catalog version, retained, on every start: the fleet sees desired vs applied even if the broker lost it.
    catalog.announce();

    // A waiting order is read at recovery; the refunds made meanwhile are only seen as events
    // (Gerege), so the Events API goes into the inbox first (the worker processes it once started).
    if (provider.listEvents && orders.repo.inStates(['creating', 'awaiting_payment']).length > 0)
      await webhooks.backfill.run('before recovery').catch(() => {});
    // Recovery before anything new is accepted: uncertain vends, unknown refunds, half-created orders.
    const recovered = await money.recover({ restored: lineage.restored });
    if (recovered.uncertain.length || recovered.settled.length || recovered.refundsUnknown)
      log.warn(recovered, 'recovered from an interrupted run');

    inputs.on(createHardwareEventHandler({ db, logger, outbox, orders, availability, actuator }));
    await inputs.start();

    kiosk = createKioskServer({ ...view.kioskDeps(sandbox?.payments), logger, clock, listener: bound.local }, settings.http.local);
    const listening = await kiosk.start();
    if (lan?.address && sandbox) {
      sandboxLan = createSandboxLanServer({ sandbox: sandbox.payments, clock, logger }, { port: lan.port });
      await sandboxLan.start();
    }

    const webhookListening = await webhooks.start();
    urls = { local: listening.url, webhook: webhookListening.url };
    // Connects in the background: a broker that is down never holds up the money path.
    await mqtt.start();
    brokerWebhooks?.start();
    poller.start();
    moneyPath = money;
    money.start();
    if (lineage.detail) {
      money.reconciler.compareAllAgain();
      void money.reconciler.run().catch((err) => log.error({ err }, 'reconcile pass failed'));
    }
    // Old finished orders and webhook bodies go in small batches, well after start-up.
    retention = createRetention({ db, clock, logger }, { retentionDays: settings.storage.retentionDays });
    retention.start();

    log.info(
      {
        localUrl: listening.url,
        webhookUrl: webhookListening.url,
        deviceId: settings.device.id,
        provider: provider.name,
        actuator: actuator.kind,
        mode: settings.device.mode,
      },
      'vendgate ready',
    );
    return { localUrl: listening.url };
  }

  async function stopOnce(): Promise<void> {
    if (!ctx) {
      // start() failed early: give back what it claimed (the process's exit would do the same).
      await Promise.all([bound.local?.close(), bound.webhook?.close()]);
      instanceLock?.release();
      return;
    }
    const { poller, webhooks, actuator, inputs, db, sandbox } = ctx;
    log.info('stopping: no new orders');
    // Inputs first (HTTP, poller, hardware inputs), then finish the vend in progress, then outputs safe.
    await retention?.stop();
    await kiosk?.stop();
    await sandboxLan?.stop();
    await bound.local?.close();
    await brokerWebhooks?.stop();
    await webhooks.stop();
    await poller.stop();
    await inputs.stop();
    // The vend in progress and the refund in flight finish (their answers recorded) first.
    await moneyPath?.stop();
    await actuator.stop();
    await ctx.mqtt.stop();
    sandbox?.close();
    checkpointer?.stop();
    try {
      recordLineage(db, settings.storage.path, { highWater: -1 });
    } catch (err) {
      log.warn({ err }, 'could not write the lineage mark beside the database');
    }
    db.close();
    instanceLock?.release();
    log.info('stopped');
  }

  return {
    start,
    stop() {
      stopping ??= stopOnce();
      return stopping;
    },
    context() {
      if (!ctx) throw new Error('the app is not started');
      return ctx;
    },
  };
}
