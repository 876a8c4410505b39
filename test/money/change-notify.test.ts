import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/store/index.js';
import { createManualClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { createOutbox } from '../../src/outbox/index.js';
import { createOrderRepository, createProviderHealth } from '../../src/orders/index.js';
import { createMoneyPath } from '../../src/money/index.js';
import { createFakeProvider } from '../fakes/provider.js';
import { testMachine, testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('money path change notifications', () => {
  let cleanup: (() => void) | null = null;
  afterEach(() => cleanup?.());

  /** The service's composition (workers start on observe) with a machine that notes what the screen had heard when it fired. */
  function build() {
    const dir = tempDir();
    const settings = testSettings(dir.path);
    const clock = createManualClock();
    const db: Db = openDatabase(settings.storage.path);
    const fake = createFakeProvider({ now: clock.now });
    let changes = 0;
    const changesWhenFired: number[] = [];
    const machine = testMachine('test machine', async () => {
      changesWhenFired.push(changes);
      return { result: 'vended' };
    });
    const money = createMoneyPath(
      {
        db,
        clock,
        logger: silentLogger(),
        outbox: createOutbox({ db, clock, deviceId: settings.device.id }),
        provider: fake.provider,
        actuator: machine,
        orderRepository: createOrderRepository({ db, clock }),
        health: createProviderHealth(clock),
        outOfService: () => null,
        events: {
          changed: () => {
            changes += 1;
          },
        },
      },
      settings,
    );
    cleanup = () => {
      db.close();
      dir.cleanup();
    };
    return { money, fake, changes: () => changes, changesWhenFired };
  }

  it('a paid observation fires the vend before the screen and MQTT are told, and they hear of the turn once', async () => {
    const { money, fake, changes, changesWhenFired } = build();
    await money.recover();
    const order = await money.orders.create({ source: 'kiosk', slot: 'A1' });
    await nextTurn();
    const before = changes();
    fake.set(order.invoice_id!, 'paid');
    const invoice = await fake.provider.getInvoice(order.invoice_id!);
    money.ledger.observe({
      invoiceId: invoice.id,
      status: invoice.status,
      providerStatus: invoice.providerStatus,
      livemode: invoice.livemode,
      amount: invoice.amount,
      currency: invoice.currency,
      channel: 'webhook',
    });
    // Observed, queued, claimed and fired in this turn; nobody computed the screen's state in between.
    expect(changesWhenFired).toEqual([before]);
    expect(changes()).toBe(before);
    await money.vend.run();
    await nextTurn();
    expect(changes()).toBe(before + 1);
    await money.stop();
  });
});
