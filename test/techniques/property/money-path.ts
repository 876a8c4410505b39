import fc from 'fast-check';
import { expect } from 'vitest';
import { VendgateError } from '../../../src/util/errors.js';
import type { Channel } from '../../../src/ledger/index.js';
import { createWorld, type ActuatorScript, type RefundScript, type World } from './world.js';

/**
 * Model-based test of the money path: any sequence of customer payments, provider-side closes, both
 * channels' observations (current, duplicated, stale, reordered, of the wrong livemode), expiry,
 * customer cancels and new orders replacing a waiting one, vend and refund runs whose hardware or
 * provider misbehaves, operator resolutions, SIGKILL-like crashes in the middle of a provider call
 * or an actuation, power cuts that lose every write not yet synced, the database restored from an
 * earlier backup, the provider cut off for longer
 * than any grace period, and refunds made from the merchant's dashboard — then the workers drain.
 * The invariants (ARCHITECTURE.md) must hold after every step and at the end.
 */

type Model = Record<string, never>;

/** Lets a started-but-unawaited call run up to its first real await. */
async function settle(until: () => boolean = () => false): Promise<void> {
  for (let i = 0; i < 50 && !until(); i += 1) await new Promise((resolve) => setImmediate(resolve));
}

async function tolerate(work: Promise<unknown>): Promise<void> {
  try {
    await work;
  } catch (err) {
    // Refusals (busy, wrong state) are answers, not failures of the property.
    if (!(err instanceof VendgateError)) throw err;
  }
}

/** The k-th most recent: k is mostly 0, so most steps are about the order on the screen. */
function pick<T>(items: readonly T[], k: number): T | undefined {
  return items.length === 0 ? undefined : items[items.length - 1 - (k % items.length)];
}

abstract class Step implements fc.AsyncCommand<Model, World> {
  check(): boolean {
    return true;
  }
  async run(_model: Model, world: World): Promise<void> {
    await this.act(world);
    world.remember();
    const broken = world.check();
    if (broken.length > 0) throw new Error(`after ${this.toString()}:\n${broken.join('\n')}`);
  }
  abstract act(world: World): Promise<void>;
  abstract toString(): string;
}

class CreateOrder extends Step {
  constructor(
    readonly slot: string,
    readonly crash: 'none' | 'before' | 'after',
  ) {
    super();
  }
  async act(w: World) {
    if (this.crash === 'none') return tolerate(w.node.orders.create({ source: 'kiosk', slot: this.slot }));
    // The process dies while the provider is creating the invoice (before or after it committed it).
    w.setProviderHang({ method: 'createInvoice', after: this.crash === 'after' });
    w.background(w.node.orders.create({ source: 'kiosk', slot: this.slot }));
    await settle();
    await w.crash();
  }
  toString() {
    return `create(${this.slot}, crash ${this.crash})`;
  }
}

class Pay extends Step {
  constructor(
    readonly k: number,
    readonly wrongAmount: boolean,
  ) {
    super();
  }
  async act(w: World) {
    const id = pick([...w.fake.invoices.keys()], this.k);
    if (id) w.pay(id, { wrongAmount: this.wrongAmount });
  }
  toString() {
    return `pay(#${this.k}${this.wrongAmount ? ', wrong amount' : ''})`;
  }
}

class ProviderCloses extends Step {
  constructor(
    readonly k: number,
    readonly status: 'expired' | 'canceled',
  ) {
    super();
  }
  async act(w: World) {
    const id = pick([...w.fake.invoices.keys()], this.k);
    if (id && w.fake.invoices.get(id)!.status === 'pending') w.fake.set(id, this.status);
  }
  toString() {
    return `provider ${this.status}(#${this.k})`;
  }
}

class Observe extends Step {
  constructor(
    readonly k: number,
    readonly channel: Channel,
    readonly stale: number | null,
    readonly wrongLivemode: boolean,
  ) {
    super();
  }
  async act(w: World) {
    const id = pick([...w.fake.invoices.keys()], this.k);
    if (!id) return;
    const invoice = w.fake.invoices.get(id)!;
    // A stale reading is a GET answered earlier and delivered late (reordered webhook, slow poll).
    const history = [...(w.seen.get(id) ?? [invoice.status])];
    const status = this.stale === null ? invoice.status : history[this.stale % history.length]!;
    const rows = () =>
      w.db
        .prepare(
          'SELECT (SELECT count(*) FROM invoice_status_ledger) + (SELECT count(*) FROM outbox) + (SELECT count(*) FROM order_history)',
        )
        .pluck()
        .get();
    const before = rows();
    const result = w.node.ledger.observe({
      invoiceId: id,
      status,
      providerStatus: status,
      livemode: this.wrongLivemode ? !invoice.livemode : invoice.livemode,
      amount: invoice.amount,
      currency: invoice.currency,
      channel: this.channel,
    });
    if (this.wrongLivemode) {
      // Invariant 2 and 7: a reading of the other livemode is refused and writes nothing.
      if (result.outcome !== 'rejected' && result.outcome !== 'unknown_invoice')
        throw new Error(`wrong livemode observation was ${result.outcome}`);
      if (rows() !== before) throw new Error('a rejected observation wrote rows');
    }
  }
  toString() {
    return `observe(#${this.k} via ${this.channel}${this.stale === null ? '' : `, stale ${this.stale}`}${this.wrongLivemode ? ', wrong livemode' : ''})`;
  }
}

class Tick extends Step {
  constructor(readonly ms: number) {
    super();
  }
  async act(w: World) {
    w.clock.advance(this.ms);
    await w.node.orders.expireDue();
  }
  toString() {
    return `tick(${this.ms} ms)`;
  }
}

class CustomerCancels extends Step {
  constructor(readonly k: number) {
    super();
  }
  async act(w: World) {
    const ids = w.db.prepare('SELECT id FROM orders ORDER BY id').pluck().all() as number[];
    const id = pick(ids, this.k);
    if (id !== undefined) await tolerate(w.node.orders.cancel(id));
  }
  toString() {
    return `cancel(#${this.k})`;
  }
}

class RunVend extends Step {
  constructor(readonly script: ActuatorScript) {
    super();
  }
  async act(w: World) {
    w.setActuator(this.script);
    if (!this.script.startsWith('hang')) {
      await w.node.vend.run();
      w.setActuator('vended');
      return;
    }
    // Killed while the machine is moving: the claim is on disk, the outcome is not.
    let done = false;
    const run = w.node.vend.run().finally(() => {
      done = true;
    });
    w.background(run);
    await settle(() => w.firing || done);
    if (w.firing) await w.crash();
    w.setActuator('vended');
  }
  toString() {
    return `vend(${this.script})`;
  }
}

class RunRefunds extends Step {
  constructor(readonly script: RefundScript) {
    super();
  }
  async act(w: World) {
    w.setRefund(this.script);
    if (!this.script.startsWith('hang')) {
      await w.node.refunds.run();
      w.setRefund('ok');
      return;
    }
    // Killed while the refund request is on the wire (sent or not, the provider may have done it).
    const before = w.fake.callsOf('refund').length;
    let done = false;
    const run = w.node.refunds.run().finally(() => {
      done = true;
    });
    w.background(run);
    await settle(() => done || w.fake.callsOf('refund').length > before);
    if (!done) await w.crash();
    w.setRefund('ok');
  }
  toString() {
    return `refunds(${this.script})`;
  }
}

class Capture extends Step {
  async act(w: World) {
    await w.node.vend.capturePending();
  }
  toString() {
    return 'capture';
  }
}

class OperatorResolves extends Step {
  constructor(readonly k: number) {
    super();
  }
  async act(w: World) {
    const ids = w.db.prepare("SELECT id FROM orders WHERE state = 'vend_uncertain' ORDER BY id").pluck().all() as number[];
    const id = pick(ids, this.k);
    // The technician looks at the machine: the physical log is what happened.
    if (id !== undefined)
      w.node.vend.resolve(
        id,
        w.physical.some((p) => p.orderId === id),
        'property test',
      );
  }
  toString() {
    return `resolve(#${this.k})`;
  }
}

class TakeBackup extends Step {
  async act(w: World) {
    w.takeBackup();
  }
  toString() {
    return 'backup';
  }
}

/** The database comes back from the last backup (order ids restart; what came after is gone). */
class RestoreBackup extends Step {
  async act(w: World) {
    await w.restore();
  }
  toString() {
    return 'restore backup';
  }
}

/** The provider is cut off (or back): longer than any grace period once ticks pass meanwhile. */
class Outage extends Step {
  constructor(readonly down: boolean) {
    super();
  }
  async act(w: World) {
    w.setOutage(this.down);
  }
  toString() {
    return this.down ? 'provider cut off' : 'provider back';
  }
}

/** The merchant refunds from the dashboard, in full or in part, whatever the device is doing. */
class RefundOutside extends Step {
  constructor(
    readonly k: number,
    readonly partial: boolean,
  ) {
    super();
  }
  async act(w: World) {
    const id = pick([...w.fake.invoices.keys()], this.k);
    if (id) w.refundOutside(id, this.partial);
  }
  toString() {
    return `refund outside(#${this.k}${this.partial ? ', partial' : ''})`;
  }
}

/** The power goes: the card keeps only what was synced; every process restarts. */
class PowerCut extends Step {
  async act(w: World) {
    await w.powerCut();
  }
  toString() {
    return 'power cut (unsynced writes lost)';
  }
}

class Crash extends Step {
  async act(w: World) {
    await w.crash();
  }
  toString() {
    return 'crash';
  }
}

const k = fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(10) });
const commands = [
  fc
    .tuple(
      fc.constantFrom('A1', 'A2', 'Z9'),
      fc.constantFrom('none', 'none', 'none', 'before', 'after') as fc.Arbitrary<'none' | 'before' | 'after'>,
    )
    .map(([slot, crash]) => new CreateOrder(slot, crash)),
  k.map((i) => new CreateOrder(i % 2 ? 'A1' : 'A2', 'none')),
  fc.tuple(k, fc.constantFrom(false, false, false, false, true)).map(([i, wrong]) => new Pay(i, wrong)),
  k.map((i) => new Pay(i, false)),
  fc.tuple(k, fc.constantFrom('expired', 'canceled') as fc.Arbitrary<'expired' | 'canceled'>).map(([i, s]) => new ProviderCloses(i, s)),
  fc
    .tuple(
      k,
      fc.constantFrom<Channel>('poll', 'webhook', 'backfill'),
      fc.option(fc.nat(5), { nil: null }),
      fc.constantFrom(false, false, false, false, false, true),
    )
    .map(([i, channel, stale, wrong]) => new Observe(i, channel, stale, wrong)),
  fc.tuple(k, fc.constantFrom<Channel>('poll', 'webhook')).map(([i, channel]) => new Observe(i, channel, null, false)),
  fc.constantFrom(1_000, 30_000, 121_000, 600_000).map((ms) => new Tick(ms)),
  k.map((i) => new CustomerCancels(i)),
  fc
    .constantFrom<ActuatorScript>('vended', 'vended', 'failed', 'throw', 'unknown-delivered', 'unknown-not', 'hang-before', 'hang-after')
    .map((s) => new RunVend(s)),
  fc
    .constantFrom<RefundScript>('ok', 'ok', 'pending', 'unknown-done', 'unknown-not', 'failed', 'hang-before', 'hang-after')
    .map((s) => new RunRefunds(s)),
  fc.constant(new Capture()),
  k.map((i) => new OperatorResolves(i)),
  fc.constant(new Crash()),
  fc.constant(new PowerCut()),
  fc.constant(new TakeBackup()),
  fc.constant(new RestoreBackup()),
  fc.boolean().map((down) => new Outage(down)),
  fc.tuple(k, fc.boolean()).map(([i, partial]) => new RefundOutside(i, partial)),
  // Replacing a waiting order: a payment, then at once a new choice.
  k.map((i) => new Pay(i, false)),
];

/** PROPERTY_RUNS=2000 for a long search. */
export const RUNS = Number(process.env.PROPERTY_RUNS ?? 100);
/** What a run may take: a minute plus a second per sequence. */
export const TIMEOUT_MS = 60_000 + RUNS * 1_000;

export const PROPERTY = 'one vend per order, no vend without money, never backwards, every payment settled';

/**
 * The property for one capture mode. Each mode is its own test file (money-path-automatic.test.ts,
 * money-path-manual.test.ts), so that two workers search both at once.
 */
export async function moneyPathHolds(captureMode: 'automatic' | 'manual'): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.boolean(), fc.commands(commands, { maxCommands: 40, size: 'large' }), async (queryable, cmds) => {
      const world = createWorld({ captureMode, queryable });
      try {
        await fc.asyncModelRun(() => ({ model: {}, real: world }), cmds);
        await world.drain();
        expect(world.check()).toEqual([]);
        expect(world.checkSettled()).toEqual([]);
      } finally {
        await world.close();
      }
    }),
    { numRuns: RUNS },
  );
}
