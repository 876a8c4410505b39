import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VendgateError } from '../../src/util/errors.js';
import { observationOf } from '../../src/ledger/index.js';
import { createWorld, type World } from './world.js';

/**
 * Both channels, the expiry pass, the customer, the vend runner and the refund worker all at once:
 * fast-check's scheduler decides in which order every provider answer and every machine outcome
 * arrives, so the webhook's GET may land before or after the poll's, the expiry's last read may
 * race the payment, and a vend may be in flight while a cancel comes in. Whatever the order, the
 * invariants (ARCHITECTURE.md) hold once the workers have drained.
 */

type Task = 'pay' | 'webhook' | 'poll' | 'expiry' | 'vend' | 'refunds' | 'cancel' | 'provider-expires' | 'create';
const TASKS: Task[] = [
  'pay',
  'pay',
  'webhook',
  'webhook',
  'poll',
  'poll',
  'expiry',
  'vend',
  'vend',
  'refunds',
  'cancel',
  'provider-expires',
  'create',
];

async function tolerate(work: Promise<unknown>): Promise<void> {
  try {
    await work;
  } catch (err) {
    if (!(err instanceof VendgateError)) throw err;
  }
}

async function runTask(w: World, task: Task): Promise<void> {
  const latest = () => [...w.fake.invoices.keys()].at(-1);
  const id = latest();
  switch (task) {
    case 'pay':
      if (id) w.pay(id);
      return;
    case 'provider-expires':
      if (id && w.fake.invoices.get(id)!.status === 'pending') w.fake.set(id, 'expired');
      return;
    case 'webhook':
    case 'poll': {
      if (!id) return;
      // The channel reads the current state; the answer may be overtaken by the other channel's.
      w.node.ledger.observe(observationOf(await w.provider.getInvoice(id), task));
      return;
    }
    case 'expiry':
      w.clock.advance(125_000);
      return w.node.orders.expireDue();
    case 'vend':
      return w.node.vend.run();
    case 'refunds':
      return w.node.refunds.run();
    case 'cancel': {
      const orderId = w.db.prepare('SELECT max(id) FROM orders').pluck().get() as number | null;
      if (orderId) await tolerate(w.node.orders.cancel(orderId));
      return;
    }
    case 'create':
      return tolerate(w.node.orders.create({ source: 'kiosk', slot: 'A2' }));
  }
}

/**
 * Releases scheduled answers one at a time until every task has finished. (waitAll() alone can
 * return while a task is a few promise hops away from scheduling its next call.)
 */
async function releaseAll(s: fc.Scheduler, running: Promise<unknown>[]): Promise<void> {
  let finished = false;
  const all = Promise.all(running).finally(() => {
    finished = true;
  });
  for (let idle = 0; !finished;) {
    if (s.count() > 0) {
      idle = 0;
      await s.waitOne();
    } else {
      if (++idle > 1_000)
        throw new Error(
          `tasks stuck without a scheduled answer:\n${s
            .report()
            .map((r) => `${r.status} ${r.label}`)
            .join('\n')}`,
        );
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  await all;
}

/** PROPERTY_RUNS=2000 for a long search. */
const RUNS = Number(process.env.PROPERTY_RUNS ?? 100);

describe('interleavings of both channels, expiry, customer and workers', () => {
  it.each(['automatic', 'manual'] as const)(
    '%s capture: any arrival order vends at most once and settles every payment',
    async (captureMode) => {
      await fc.assert(
        fc.asyncProperty(fc.scheduler(), fc.array(fc.constantFrom(...TASKS), { minLength: 2, maxLength: 14 }), async (s, tasks) => {
          let scheduling = false;
          const world = createWorld({
            captureMode,
            queryable: false,
            delay: () => (scheduling ? (label, work) => s.schedule(Promise.resolve(label), label).then(() => work()) : undefined),
          });
          try {
            await world.node.orders.create({ source: 'kiosk', slot: 'A1' });
            scheduling = true;
            const running = tasks.map((task) => s.schedule(Promise.resolve(task), `start ${task}`).then(() => runTask(world, task)));
            await releaseAll(s, running);
            scheduling = false;
            world.remember();
            expect(world.check()).toEqual([]);
            await world.drain();
            expect(world.check()).toEqual([]);
            expect(world.checkSettled()).toEqual([]);
          } finally {
            scheduling = false;
            await world.close();
          }
        }),
        { numRuns: RUNS },
      );
    },
    60_000 + RUNS * 1_000,
  );
});
