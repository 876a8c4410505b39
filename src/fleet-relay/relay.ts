import { hostname } from 'node:os';
import type { RelaySettings } from '../settings/fleet-relay/index.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { PaymentProvider } from '../payments/index.js';
import { routeLookupClientOf } from '../payments/route-lookup.js';
import { createFleetTopics, createRelayConnection, type RelayConnection } from '../mqtt/index.js';
import { createRouteTable } from './routes.js';
import { createLocator } from './locate.js';
import { createCounters, type RelayCounters } from './counters.js';
import { createRelayServer } from './server.js';
import { createKaspiRelay, kaspiRelayOptions, type KaspiRelay } from './kaspi-relay.js';

export interface RelayDeps {
  logger: Logger;
  clock?: Clock;
  /** Replaces the invoice lookup client that payments/ builds from `relay.routeLookup` (tests). */
  lookup?: PaymentProvider | null;
}

export interface Relay {
  /**
   * Listens and connects to the broker; the health route says 503 until the broker answered. Answers
   * the webhook listener's address, or the Kaspi caller's when the relay serves no webhook provider.
   */
  start(): Promise<{ url: string; port: number }>;
  stop(): Promise<void>;
  stats(): RelayCounters & {
    devices: number;
    lookups: number;
    brokerConnected: boolean;
    routesLearned: boolean;
    kaspi?: ReturnType<KaspiRelay['stats']>;
  };
  /** True once the broker connection is up and every retained route it held has been read (Kaspi-only: once its listener is up). */
  ready(): boolean;
  inject: ReturnType<typeof createRelayServer>['inject'];
}

/**
 * `vendgate relay`: the fleet's one webhook endpoint. Stateless — no database, no money state, no
 * per-device configuration — so replicas behind one load balancer are interchangeable.
 */
export function createRelay(settings: Readonly<RelaySettings>, deps: RelayDeps): Relay {
  const clock = deps.clock ?? systemClock;
  const log = deps.logger.child({ module: 'relay' });
  const { relay } = settings;
  const replicaId =
    relay.id ??
    `${hostname()
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')}-${process.pid}`;
  const routes = createRouteTable();
  const counters = createCounters();
  const lookup = deps.lookup !== undefined ? deps.lookup : routeLookupClient(relay, { clock, logger: deps.logger });
  const locator = createLocator({ routes, logger: deps.logger, lookup, cacheSize: relay.routeLookup.cacheSize });
  // No webhook provider (`providers: []`, a Kaspi-only relay): no webhook listener, no broker connection.
  const webhooks = relay.providers.length > 0;
  const broker: RelayConnection | null = !webhooks
    ? null
    : createRelayConnection(
        {
          logger: deps.logger,
          replicaId,
          now: () => clock.now(),
          onRoute: (deviceId, route) => {
            const known = routes.update(deviceId, route);
            if (route && !known)
              log.warn(
                { deviceId, prefixes: route.referencePrefixes },
                'route announcement ignored: it names no database of its own device',
              );
            else
              log.debug(
                { deviceId, prefixes: route?.referencePrefixes ?? [] },
                route ? 'device route announced' : 'device route withdrawn',
              );
          },
          onRouteDropped: () => {
            counters.routesDropped += 1;
          },
        },
        settings.mqtt,
      );
  const server = !broker
    ? null
    : createRelayServer(
        {
          clock,
          logger: deps.logger,
          broker,
          topics: createFleetTopics(settings.mqtt.prefix),
          locator,
          counters,
          secrets: relay.webhookSecrets,
        },
        relay,
      );
  // The Kaspi caller (relay.kaspi): its own listener beside the webhook one (kaspi-*.ts).
  const kaspi = relay.kaspi.enabled
    ? createKaspiRelay(kaspiRelayOptions(relay.kaspi), { logger: deps.logger, now: () => clock.now() })
    : null;
  let kaspiListening = false;
  let statsTimer: NodeJS.Timeout | null = null;
  let stopping: Promise<void> | null = null;

  function stats() {
    return {
      ...counters,
      devices: routes.devices(),
      lookups: locator.lookups(),
      brokerConnected: broker?.connected() ?? false,
      routesLearned: broker?.routesLearned() ?? false,
      ...(kaspi ? { kaspi: kaspi.stats() } : {}),
    };
  }

  return {
    async start() {
      broker?.start();
      const listening = server ? await server.start() : null;
      let kaspiUrl: { url: string; port: number } | null = null;
      if (kaspi) {
        kaspiUrl = await kaspi.start();
        kaspiListening = true;
        log.info({ url: kaspiUrl.url }, 'kaspi caller ready');
      }
      statsTimer = setInterval(() => log.info(stats(), 'relay counters'), relay.statsIntervalSec * 1000);
      statsTimer.unref();
      const served = listening ?? kaspiUrl;
      // The settings refuse a relay that serves nothing; this only guards the type.
      if (!served) throw new Error('the relay serves no webhook provider and no Kaspi caller');
      log.info(
        {
          url: listening?.url ?? null,
          kaspiUrl: kaspiUrl?.url ?? null,
          replicaId,
          providers: relay.providers,
          routeLookup: lookup !== null,
        },
        'relay ready',
      );
      return served;
    },
    stop() {
      stopping ??= (async () => {
        if (statsTimer) clearInterval(statsTimer);
        // Inputs first: no new webhook is accepted, the ones in flight finish, then the broker goes.
        await server?.stop();
        await kaspi?.stop();
        await broker?.stop();
        log.info(stats(), 'relay stopped');
      })();
      return stopping;
    },
    stats,
    ready: () => (broker ? broker.routesLearned() : kaspiListening),
    inject: ((...args: Parameters<ReturnType<typeof createRelayServer>['inject']>) => {
      if (!server) throw new Error('this relay serves no webhook provider: it has no webhook listener');
      return (server.inject as (...a: unknown[]) => unknown)(...args);
    }) as ReturnType<typeof createRelayServer>['inject'],
  };
}

/**
 * The client that reads an invoice's reference for events that name only their invoice: built by
 * the first served provider that has one (payments/route-lookup.ts), with the
 * relay's read-only key; null without a key or without such a provider.
 */
function routeLookupClient(relay: Readonly<RelaySettings>['relay'], deps: { clock: Clock; logger: Logger }): PaymentProvider | null {
  const { baseUrl, clientId, clientSecret, scope, requestTimeoutMs } = relay.routeLookup;
  if (!baseUrl || !clientId || !clientSecret) return null;
  for (const provider of relay.providers) {
    const client = routeLookupClientOf(provider, deps, { baseUrl, clientId, clientSecret, scope, requestTimeoutMs });
    if (client) return client;
  }
  return null;
}
