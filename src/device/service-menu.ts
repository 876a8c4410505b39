import type { Settings } from '../settings/index.js';
import type { Outbox } from '../outbox/index.js';
import type { OrderService, SalesFigures } from '../orders/index.js';
import type { Catalog } from '../catalog/index.js';
import type { KioskService } from '../kiosk/index.js';
import type { DeviceControl } from '../mqtt/index.js';
import { buildInfo } from '../version.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';

/** Who the audit trail names for what the kiosk's service menu did. */
export const SERVICE_MENU_ACTOR = 'service-menu';

/** Exactly what the service menu reads and calls. */
export interface ServiceMenuDeps {
  settings: Pick<Readonly<Settings>, 'device' | 'provider' | 'storage' | 'kiosk'>;
  orders: Pick<OrderService, 'list'>;
  outbox: Pick<Outbox, 'openAlarms'>;
  catalog: Pick<Catalog, 'offered'> & { slots: Pick<Catalog['slots'], 'get'> };
  /** The operator's controls: the selftest the MQTT command runs, and the CLI's refill and clear-jam (they notify the screen). */
  control: Pick<DeviceControl, 'runSelftest' | 'catalog'>;
  sales?: () => SalesFigures;
}

const LAST_ORDERS = 10;

const todaysSales = (figures: SalesFigures) => ({ currency: figures.currency, since: figures.todaySince, ...figures.today });

/**
 * The kiosk's service menu, seen from the device: what a technician on site reads (identity,
 * stock, jams, the last orders, open alarms, today's sales, the selftest) and the two things
 * they may do. Refill and clear-jam are the same calls as `vendgate refill` / `clear-jam` and
 * cmd/refill / cmd/clear_jam, and write their outbox event with by: 'service-menu'. Nothing here
 * refunds, resolves or fires the machine: those stay signed commands or the CLI.
 */
export function createServiceMenu(deps: ServiceMenuDeps): KioskService {
  const { settings, control } = deps;
  const slots = () => {
    if (!control.catalog) throw new VendgateError(ErrorCodes.UNKNOWN_SLOT, 'this device has no catalog: nothing to refill or clear');
    return control.catalog;
  };
  return {
    pin: settings.kiosk.servicePin ?? null,
    overview() {
      const release = buildInfo();
      return {
        identity: {
          deviceId: settings.device.id,
          release: `${release.version} (${release.commit})`,
          provider: settings.provider.name,
          livemode: settings.device.livemode,
          database: settings.storage.path,
        },
        slots: deps.catalog.offered().map((item) => ({ ...deps.catalog.slots.get(item.slot), name: item.name, available: item.available })),
        orders: deps.orders.list({ limit: LAST_ORDERS }).map((order) => ({
          orderId: order.id,
          reference: order.reference,
          state: order.state,
          slot: order.slot,
          amount: order.amount,
          createdAt: new Date(order.created_at).toISOString(),
        })),
        alarms: deps.outbox.openAlarms().map((alarm) => ({
          name: alarm.name,
          severity: alarm.severity,
          message: alarm.message,
          raisedAt: new Date(alarm.raised_at).toISOString(),
        })),
        sales: deps.sales ? todaysSales(deps.sales()) : null,
      };
    },
    async selftest() {
      const { report } = (await control.runSelftest()) as {
        report: { ok: boolean; checks: { name: string; status: string; detail: string; hint: string }[] };
      };
      return { ok: report.ok, checks: report.checks.map(({ name, status, detail, hint }) => ({ name, status, detail, hint })) };
    },
    refill: (slot, count) => slots().refill(slot, count, SERVICE_MENU_ACTOR),
    clearJam: (slot) => slots().clearJam(slot, SERVICE_MENU_ACTOR),
  };
}
