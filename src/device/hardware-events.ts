import type { Actuator, HardwareEvent } from '../hardware/index.js';
import type { Db } from '../store/index.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import type { OrderService } from '../orders/index.js';
import { errorMessage } from '../util/errors.js';
import { inTransaction } from '../store/index.js';
import type { Availability } from './availability.js';

/** Exactly what the reactions to inputs use. */
export interface HardwareEventDeps {
  db: Db;
  logger: Logger;
  outbox: Pick<Outbox, 'raiseAlarm' | 'clearAlarm'>;
  orders: Pick<OrderService, 'create' | 'cancel' | 'inStates'>;
  availability: Pick<Availability, 'set' | 'clear'>;
  actuator: Pick<Actuator, 'denySession'>;
  /** The screen and MQTT read the state again (the kiosk's selection follows the MDB style in force). */
  notify?: () => void;
}

/**
 * Turns what the machine tells us into orders and service state. Hardware knows nothing of money;
 * this is where its signals meet the order service. The screen and MQTT follow a change of
 * availability through its subscribers.
 */
export function createHardwareEventHandler(deps: HardwareEventDeps): (event: HardwareEvent) => void {
  const { orders, availability } = deps;
  const log = deps.logger.child({ module: 'inputs' });
  const alarm = (name: string, on: boolean, message: string) =>
    inTransaction(deps.db, () => (on ? deps.outbox.raiseAlarm(name, 'critical', message) : deps.outbox.clearAlarm(name)));

  return (event) => {
    switch (event.type) {
      case 'button':
        orders.create({ source: 'button' }).catch((err) => log.warn({ err: errorMessage(err) }, 'button pressed but no order was created'));
        return;
      case 'inhibit':
        if (event.active) availability.set('inhibit');
        else availability.clear('inhibit');
        return;
      case 'fire_alarm':
        alarm('fire_alarm', event.active, 'fire alarm input active: the gate is open and no orders are taken');
        if (event.active) availability.set('fire_alarm');
        else availability.clear('fire_alarm');
        return;
      case 'line':
        alarm('serial_line_down', !event.up, `serial line to the machine is down: ${event.detail}`);
        if (event.up) availability.clear('serial_line');
        else availability.set('serial_line');
        return;
      case 'vend_request':
        orders.create({ source: 'mdb', item: event.item, amount: event.amount, expiresInSec: event.budgetSec }).catch((err) => {
          log.warn({ err: errorMessage(err), item: event.item }, 'machine vend request refused');
          void deps.actuator.denySession?.(errorMessage(err));
        });
        return;
      case 'machine_alarm':
        log.warn({ alarm: event.name }, event.message);
        inTransaction(deps.db, () =>
          event.active ? deps.outbox.raiseAlarm(event.name, 'critical', event.message) : deps.outbox.clearAlarm(event.name),
        );
        return;
      case 'session_style':
        log.info({ style: event.style }, 'mdb session style in force changed: the screen follows');
        deps.notify?.();
        return;
      case 'session_cancel': {
        const open = orders.inStates(['awaiting_payment']).filter((o) => o.source === 'mdb');
        for (const order of open) orders.cancel(order.id, 'machine').catch((err) => log.warn({ err: errorMessage(err) }, 'cancel failed'));
        return;
      }
    }
  };
}
