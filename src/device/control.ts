import type { DeviceControl } from './mqtt/index.js';
import type { Settings } from './settings/index.js';
import type { Db } from './store/index.js';
import type { Clock } from './util/clock.js';
import type { Logger } from './util/logger.js';
import type { Outbox } from './outbox/index.js';
import type { OrderService } from './orders/index.js';
import type { VendRunner, RefundWorker } from './vend/index.js';
import type { PaymentProvider } from './payments/index.js';
import type { Actuator, HardwareInputs } from './hardware/index.js';
import type { Catalog } from './catalog/index.js';
import type { DeviceView } from './device-view.js';
import { ErrorCodes, VendgateError } from './util/errors.js';
import { inTransaction } from './store/index.js';
import { orderView } from './orders/index.js';
import { runSelftest } from './selftest/index.js';

/**
 * The services the operator's controls use, declared here (app.ts's context satisfies it) so that
 * this file does not import app.ts, which imports it.
 */
export interface DeviceControlPorts {
  settings: Readonly<Settings>;
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
  provider: PaymentProvider;
  orders: OrderService;
  vend: VendRunner;
  refunds: RefundWorker;
  actuator: Actuator;
  inputs: HardwareInputs;
  view: DeviceView;
  catalog: Catalog;
}

export interface DeviceControlDeps {
  ctx: () => DeviceControlPorts;
  outOfService: Map<string, string>;
  listeners: Set<() => void>;
  notify: () => void;
  /** Where the running service listens (for the in-process selftest). */
  urls: () => { local?: string; webhook?: string };
  source: string;
  environment: string[];
}

/**
 * What operators may do to the device remotely (MQTT commands). Every money decision goes through
 * the same settlement code as the CLI; a test vend moves no money and is refused while an order is
 * in progress.
 */
export function createDeviceControl(deps: DeviceControlDeps): DeviceControl {
  const { outOfService, notify } = deps;
  const view = (orderId: number) => {
    const { orders } = deps.ctx();
    return orderView(orders.get(orderId)!, orders.history(orderId));
  };

  return {
    state() {
      const state = deps.ctx().view.state();
      return {
        mode: state.mode,
        phase: state.phase,
        orderId: state.order?.orderId ?? null,
        reference: state.order?.reference ?? null,
        since: state.since,
        reason: state.reason,
      };
    },
    setOutOfService(on, reason) {
      if (on) outOfService.set('operator', `operator: ${reason || 'out of service'}`);
      else outOfService.delete('operator');
      const { db, outbox } = deps.ctx();
      inTransaction(db, () => outbox.event('device.out_of_service', { on, reason: reason || null }));
      notify();
    },
    async resolve(orderId, vended) {
      deps.ctx().vend.resolve(orderId, vended, 'mqtt');
      void deps.ctx().refunds.run();
      return view(orderId);
    },
    async refund(orderId) {
      deps.ctx().vend.refund(orderId, 'mqtt');
      void deps.ctx().refunds.run();
      return view(orderId);
    },
    async testVend(slot) {
      const { settings, actuator, orders, vend, logger } = deps.ctx();
      const busy = orders.repo.inStates(['creating', 'awaiting_payment', 'paid', 'authorized', 'vending']);
      if (busy.length > 0 || vend.busy()) {
        throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'an order is in progress; try the test vend when the machine is idle', {
          httpStatus: 409,
        });
      }
      const items = deps.ctx().catalog.current().items;
      const item = settings.device.mode === 'vending' ? items.find((c) => c.slot === slot) : null;
      if (settings.device.mode === 'vending' && !item) {
        throw new VendgateError(
          ErrorCodes.UNKNOWN_SLOT,
          `unknown slot "${slot ?? ''}"; this machine has: ${items.map((c) => c.slot).join(', ')}`,
          { httpStatus: 400 },
        );
      }
      logger.child({ module: 'control' }).warn({ slot }, 'remote test vend (no money)');
      return actuator.fire({
        orderId: 0,
        reference: 'test-vend',
        slot: item?.slot ?? null,
        amount: item?.price ?? settings.device.fare ?? 0,
        currency: settings.device.currency,
        mode: settings.device.mode,
      });
    },
    async runSelftest() {
      const ctx = deps.ctx();
      const run = await runSelftest(
        { settings: ctx.settings, source: deps.source, environment: deps.environment, urls: deps.urls(), store: true },
        { clock: ctx.clock, logger: ctx.logger, live: { db: ctx.db, provider: ctx.provider, actuator: ctx.actuator, inputs: ctx.inputs } },
      );
      return { ok: run.report.ok, report: run.report };
    },
    telemetry() {
      return deps.ctx().view.telemetry();
    },
    onStateChange(listener) {
      deps.listeners.add(listener);
    },
    catalog: {
      apply(document) {
        const result = deps.ctx().catalog.apply(document, 'mqtt');
        notify();
        return result;
      },
      rollback() {
        const result = deps.ctx().catalog.rollback('mqtt');
        notify();
        return result;
      },
      refill(slot, count) {
        const result = deps.ctx().catalog.slots.refill(slot, count, 'mqtt');
        notify();
        return result;
      },
      clearJam(slot) {
        const result = deps.ctx().catalog.slots.clearJam(slot, 'mqtt');
        notify();
        return result;
      },
      slots: () =>
        deps
          .ctx()
          .catalog.current()
          .items.map((item) => item.slot),
    },
  };
}
