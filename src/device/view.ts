import { selectionOn, type Settings } from '../settings/index.js';
import { toIso, type Clock } from '../util/clock.js';
import type { Outbox } from '../outbox/index.js';
import {
  orderView,
  safeAppLinks,
  DEFAULT_APP_LINK_SCHEMES,
  screenPhase,
  ORDER_STATES,
  type OrderService,
  type ProviderHealth,
  type SalesFigures,
  type ScreenPhase,
} from '../orders/index.js';
import type { DeviceState, KioskDeps, Phase, SandboxPayments } from '../kiosk/index.js';
import type { Metrics } from '../metrics/index.js';
import type { DeviceTelemetry } from '../mqtt/index.js';
import type { Catalog } from '../catalog/index.js';
import type { Availability } from './availability.js';
import type { StateChanges } from './state-changes.js';
import type { FiscalSnapshot, ScreenReceipt } from '../fiscal/index.js';

/** The kiosk's phases and the order view's are one set: a phase added on one side only does not compile. */
export const SAME_PHASES: [Phase] extends [ScreenPhase] ? ([ScreenPhase] extends [Phase] ? true : never) : never = true;

/** Exactly what the screen's view reads and the kiosk's ports call. */
export interface DeviceViewDeps {
  settings: Pick<Readonly<Settings>, 'device' | 'kiosk' | 'provider'> & Partial<Pick<Readonly<Settings>, 'actuator'>>;
  clock: Clock;
  orders: Pick<OrderService, 'get' | 'history' | 'create' | 'cancel' | 'latest' | 'countByState' | 'windowEndsAt'>;
  health: Pick<ProviderHealth, 'reachable' | 'lastError'>;
  availability: Pick<Availability, 'reason' | 'isAvailable'>;
  outbox: Pick<Outbox, 'counters' | 'depth' | 'openAlarms'>;
  poller: { lastPollAt(): number | null };
  startedAt: number;
  changes: Pick<StateChanges, 'subscribe'>;
  metrics: Pick<Metrics, 'render'>;
  catalog: Pick<Catalog, 'offered' | 'current'> & { slots: Pick<Catalog['slots'], 'get' | 'refill'> };
  /** After a change made here (a refill): the screen and MQTT follow. */
  notify?: () => void;
  /** MDB: the session style in force (the actuator's; session: auto learns it from the machine). */
  sessionStyle?: () => 'always-idle' | 'authorization-first' | null;
  /** The card beneath the database: /healthz names it (src/store/storage-health.ts). */
  storage?: { fault(): unknown; describe(): string };
  /** Fiscal receipts (src/fiscal/): the result screen's QR, telemetry and /metrics. Absent: no register. */
  fiscal?: { screen(orderId: number): ScreenReceipt | null; snapshot(): FiscalSnapshot };
  /** Sales figures from the orders (telemetry and /metrics). */
  sales?: () => SalesFigures;
}

/** What the screen, /metrics and MQTT telemetry read: derived from the database on every call. */
export interface DeviceView {
  /** The screen's state (/api/state, the kiosk's event stream, MQTT `state`): phase, order, catalog. */
  state(): DeviceState;
  /** MQTT `telemetry`: uptime, counters, orders by state, outbox depth, open alarms, stock. */
  telemetry(): DeviceTelemetry;
  /** The Prometheus text of /metrics. */
  metrics(): string;
  /** The kiosk server's ports, with the sandbox's pay buttons when the demo runs one. */
  kioskDeps(sandbox: SandboxPayments | undefined): KioskDeps;
}

export function createDeviceView(deps: DeviceViewDeps): DeviceView {
  const { settings, clock, orders, health, availability, outbox } = deps;
  let since = clock.now();
  let lastPhase = '';

  let lookAgain: { at: number; timer: NodeJS.Timeout } | null = null;

  /**
   * A finished order leaves the screen by the clock alone, with no change to any row: at that
   * moment the followers (MQTT's retained `state`, the kiosk's stream) are told, so they read idle
   * when the screen does, not at the next sale.
   */
  function lookAgainAt(at: number, now: number): void {
    if (!deps.notify || lookAgain?.at === at) return;
    if (lookAgain) clearTimeout(lookAgain.timer);
    const timer = setTimeout(
      () => {
        lookAgain = null;
        deps.notify?.();
      },
      Math.max(0, at - now) + 1,
    );
    timer.unref();
    lookAgain = { at, timer };
  }

  /** An order as the screen shows it: its countdown ends with the customer's window on this device's clock. */
  function screenOrder(order: NonNullable<ReturnType<typeof orders.get>>) {
    const view = orderView(order, orders.history(order.id));
    // Only https and the app schemes the operator allows reach the page (which checks again).
    const appLinks = safeAppLinks(view.appLinks, settings.kiosk.appLinkSchemes ?? DEFAULT_APP_LINK_SCHEMES);
    return { ...view, appLinks, expiresAt: toIso(orders.windowEndsAt(order)) };
  }

  function state(): DeviceState {
    const now = clock.now();
    const reason = availability.reason();
    const { phase, order, until } = screenPhase({
      latest: orders.latest(),
      now,
      resultScreenMs: settings.kiosk.resultScreenSec * 1000,
      outOfService: reason,
      providerReachable: health.reachable,
    });
    if (until !== undefined) lookAgainAt(until, now);
    const key = `${phase}:${order?.id ?? ''}`;
    if (key !== lastPhase) {
      lastPhase = key;
      since = now;
    }
    return {
      deviceId: settings.device.id,
      mode: settings.device.mode,
      phase,
      reason: phase === 'offline' ? `payment service unreachable: ${health.lastError ?? ''}`.trim() : reason,
      currency: settings.device.currency,
      language: settings.kiosk.language,
      provider: settings.provider.name,
      supportContact: settings.kiosk.supportContact ?? null,
      paymentApps: settings.kiosk.paymentApps ?? null,
      catalog: deps.catalog.offered().map((c) => ({
        slot: c.slot,
        name: c.name,
        ...(c.names ? { names: c.names } : {}),
        price: c.price,
        available: c.available,
        unavailable: c.unavailable,
      })),
      catalogVersion: deps.catalog.current().version,
      fare: settings.device.fare ?? null,
      autoStart: settings.kiosk.autoStart,
      selection: settings.actuator ? selectionOn(settings.actuator, deps.sessionStyle?.()) : 'kiosk',
      resultScreenSec: settings.kiosk.resultScreenSec,
      order: order ? screenOrder(order) : null,
      receipt: order && order.state === 'vended' ? (deps.fiscal?.screen(order.id) ?? null) : null,
      since: new Date(since).toISOString(),
      now: new Date(now).toISOString(),
    };
  }

  function telemetry(): DeviceTelemetry {
    const byState: Record<string, number> = Object.fromEntries(ORDER_STATES.map((s) => [s, 0]));
    for (const row of orders.countByState()) byState[row.state] = row.n;
    const lastPollAt = deps.poller.lastPollAt();
    return {
      uptimeSec: Math.round((clock.now() - deps.startedAt) / 1000),
      counters: outbox.counters(),
      ordersByState: byState,
      lastPollAt: lastPollAt ? new Date(lastPollAt).toISOString() : null,
      providerReachable: health.reachable,
      outboxDepth: outbox.depth(),
      openAlarms: outbox.openAlarms().map((a) => a.name),
      catalogVersion: deps.catalog.current().version,
      // Per slot: counted stock (null: not counted) and whether it is out of sale.
      stock: Object.fromEntries(deps.catalog.offered().map((c) => [c.slot, c.stock])),
      jammedSlots: deps.catalog
        .offered()
        .filter((c) => c.unavailable === 'jammed')
        .map((c) => c.slot),
      ...(deps.fiscal ? { fiscal: deps.fiscal.snapshot() } : {}),
      ...(deps.sales ? { sales: deps.sales() } : {}),
    };
  }

  function metrics(): string {
    const t = telemetry();
    return deps.metrics.render({
      counters: t.counters,
      ordersByState: t.ordersByState,
      outboxDepth: t.outboxDepth,
      openAlarms: t.openAlarms.length,
      providerReachable: t.providerReachable,
      stock: t.stock,
      ...(t.fiscal ? { receipts: { pending: t.fiscal.pending, oldestAgeSec: t.fiscal.oldestAgeSec, reachable: t.fiscal.reachable } } : {}),
      ...(t.sales ? { sales: t.sales } : {}),
    });
  }

  return {
    state,
    telemetry,
    metrics,
    kioskDeps(sandbox: SandboxPayments | undefined): KioskDeps {
      return {
        orders: {
          async create(input) {
            const order = await orders.create({ source: input.source, slot: input.slot });
            return {
              orderId: order.id,
              reference: order.reference,
              state: order.state,
              invoiceId: order.invoice_id,
              payUrl: order.pay_url,
              expiresAt: toIso(orders.windowEndsAt(order)),
            };
          },
          get(orderId) {
            const order = orders.get(orderId);
            return order ? screenOrder(order) : null;
          },
          async cancel(orderId) {
            const order = await orders.cancel(orderId, 'customer');
            return screenOrder(order);
          },
        },
        state,
        subscribe(listener) {
          return deps.changes.subscribe(() => listener(state()));
        },
        health() {
          const checks: Record<string, { ok: boolean; detail: string }> = {
            provider: { ok: health.reachable, detail: health.reachable ? 'reachable' : (health.lastError ?? 'unreachable') },
            service: { ok: availability.isAvailable(), detail: availability.reason() ?? 'taking orders' },
          };
          if (deps.storage) checks.storage = { ok: !deps.storage.fault(), detail: deps.storage.describe() };
          return { ok: Object.values(checks).every((c) => c.ok), checks };
        },
        metrics,
        slots: {
          list: () =>
            deps.catalog
              .offered()
              .map((item) => ({ ...deps.catalog.slots.get(item.slot), name: item.name, price: item.price, available: item.available })),
          refill(slot, count) {
            const result = deps.catalog.slots.refill(slot, count, 'local api');
            deps.notify?.();
            return result;
          },
        },
        ...(sandbox ? { sandbox } : {}),
      };
    },
  };
}
