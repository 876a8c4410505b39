import type { Actuator, HardwareEvent } from './hardware/index.js';
import type { Db } from './store/index.js';
import type { Logger } from './util/logger.js';
import type { Outbox } from './outbox/index.js';
import type { OrderService } from './orders/index.js';
import { errorMessage } from './util/errors.js';
import { inTransaction } from './store/index.js';

/** The services the reactions to inputs use (app.ts's context satisfies it; no import back into app.ts). */
export interface HardwareEventPorts {
  db: Db;
  logger: Logger;
  outbox: Outbox;
  orders: OrderService;
  actuator: Actuator;
}

/**
 * Turns what the machine tells us into orders and service state. Hardware knows nothing of money;
 * this is where its signals meet the order service.
 */
export function handleHardwareEvent(
  ctx: HardwareEventPorts,
  outOfService: Map<string, string>,
  event: HardwareEvent,
  notify: () => void,
): void {
  const log = ctx.logger.child({ module: 'inputs' });
  const alarm = (name: string, on: boolean, message: string) =>
    inTransaction(ctx.db, () => (on ? ctx.outbox.raiseAlarm(name, 'critical', message) : ctx.outbox.clearAlarm(name)));
  switch (event.type) {
    case 'button':
      ctx.orders
        .create({ source: 'button' })
        .catch((err) => log.warn({ err: errorMessage(err) }, 'button pressed but no order was created'));
      return;
    case 'inhibit':
      if (event.active) outOfService.set('inhibit', 'the machine inhibits sales');
      else outOfService.delete('inhibit');
      notify();
      return;
    case 'fire_alarm':
      if (event.active) outOfService.set('fire_alarm', 'fire alarm: gate held open');
      else outOfService.delete('fire_alarm');
      alarm('fire_alarm', event.active, 'fire alarm input active: the gate is open and no orders are taken');
      notify();
      return;
    case 'line':
      if (event.up) outOfService.delete('serial_line');
      else outOfService.set('serial_line', 'no connection to the vending machine');
      alarm('serial_line_down', !event.up, `serial line to the machine is down: ${event.detail}`);
      notify();
      return;
    case 'vend_request':
      ctx.orders.create({ source: 'mdb', item: event.item, amount: event.amount }).catch((err) => {
        log.warn({ err: errorMessage(err), item: event.item }, 'machine vend request refused');
        void ctx.actuator.denySession?.(errorMessage(err));
      });
      return;
    case 'session_cancel': {
      const open = ctx.orders.repo.inStates(['awaiting_payment']).filter((o) => o.source === 'mdb');
      for (const order of open)
        ctx.orders.cancel(order.id, 'machine').catch((err) => log.warn({ err: errorMessage(err) }, 'cancel failed'));
      return;
    }
  }
}
