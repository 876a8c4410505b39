/**
 * The money path with fiscal receipts on a real SQLite file (test/helpers/core.ts's composition),
 * the sandbox register in its own SQLite file beside it, a manual clock and a machine whose answer
 * the test picks. `restart()` is a crash: the node is dropped without stopping anything and
 * composed again on the same files, as the service is after kill -9.
 */
import { expect, onTestFinished } from 'vitest';
import { observeDurableCommits, type DurableStep } from '../../src/store/index.js';
import { composeMoneyPath, testMachine, testSettings, type CoreNode } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { createManualClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { observationOf } from '../../src/ledger/index.js';
import { createFiscal, type Fiscal, type FiscalRegister, type SandboxRegister } from '../../src/fiscal/index.js';
import { createSandboxRegister, sandboxRegisterDbPath } from '../../src/fiscal/sandbox.js';
import type { Clock } from '../../src/util/clock.js';
import type { VendOutcome } from '../../src/hardware/index.js';
import { createFakeProvider } from '../fakes/provider.js';

export interface FiscalHarnessOptions {
  /** Merged over `{ register: 'sandbox' }`. */
  fiscal?: Record<string, unknown>;
  lotteryStock?: number | null;
  /** Another register than the sandbox (an adapter against the simulator); called again at each restart. */
  register?: (clock: Clock) => FiscalRegister;
  /** Merged over the test provider settings (a register that needs the provider's, e.g. qpay). */
  provider?: Record<string, unknown>;
}

export function buildFiscalCore(options: FiscalHarnessOptions = {}) {
  const dir = tempDir();
  const settings = testSettings(dir.path, {
    fiscal: { register: 'sandbox', ...options.fiscal },
    ...(options.provider ? { provider: options.provider } : {}),
  });
  const clock = createManualClock();
  const logger = silentLogger();
  const fake = createFakeProvider({ livemode: settings.device.livemode, now: clock.now });
  const machine = { next: (): VendOutcome => ({ result: 'vended' }), fired: 0 };
  const actuator = testMachine('fiscal test machine', async () => {
    machine.fired += 1;
    return machine.next();
  });
  const stopped = { reason: null as string | null };
  /** Named crash points: the one named here throws (the "process" dies there). */
  const crash = { at: null as string | null };

  function compose() {
    const sandbox: SandboxRegister | null = options.register
      ? null
      : createSandboxRegister(
          { clock },
          { dbPath: sandboxRegisterDbPath(settings.storage.path), lotteryStock: options.lotteryStock ?? null },
        );
    const register: FiscalRegister = options.register?.(clock) ?? sandbox!;
    let fiscal!: Fiscal;
    const node: CoreNode = composeMoneyPath({
      settings,
      clock,
      logger,
      provider: fake.provider,
      actuator,
      outOfService: () => stopped.reason,
      receipts: ({ db, outbox }) => {
        fiscal = createFiscal(
          {
            db,
            clock,
            logger,
            outbox,
            register,
            stopSales: (detail) => {
              stopped.reason = detail;
            },
            crashPoint: (name) => {
              if (crash.at === name) {
                crash.at = null;
                throw new Error(`crash at ${name}`);
              }
            },
          },
          settings.fiscal,
        );
        return fiscal.receipts;
      },
    });
    return { ...node, sandbox, fiscal };
  }

  let node = compose();
  const h = {
    dir,
    settings,
    clock,
    fake,
    machine,
    stopped,
    crash,
    get node() {
      return node;
    },
    /** The sandbox register (its faults, what it holds); a test with another register has none. */
    get register(): SandboxRegister {
      if (!node.sandbox) throw new Error('this harness runs another register than the sandbox');
      return node.sandbox;
    },
    get fiscal() {
      return node.fiscal;
    },
    /** A paid order, vended by the runner (the machine answers `machine.next()`). */
    async sell(slot = 'A1') {
      const order = await node.money.orders.create({ source: 'kiosk', slot });
      fake.set(order.invoice_id!, 'paid');
      node.money.ledger.observe(observationOf(await fake.provider.getInvoice(order.invoice_id!), 'poll'));
      await node.money.vend.run();
      return node.orderRepository.get(order.id)!;
    },
    /** One fiscal pass (worker, then alarms), as the timer makes. */
    async pass() {
      await node.fiscal.worker.run();
      await node.fiscal.monitor.check();
    },
    receipts(orderId?: number) {
      const rows = node.db.prepare('SELECT * FROM receipts ORDER BY id').all() as Record<string, any>[];
      return orderId === undefined ? rows : rows.filter((r) => r.order_id === orderId);
    },
    alarms: () => node.outbox.openAlarms().map((a) => a.name),
    /** kill -9 and start again on the same files: recovery runs, nothing is stopped cleanly. */
    async restart() {
      node.db.close();
      await node.fiscal.register.close?.();
      // A new process: its availability starts open; the monitor stops sales again if it must.
      stopped.reason = null;
      node = compose();
      await node.money.recover();
      node.fiscal.recover();
    },
    async close() {
      await node.fiscal.stop();
      node.db.close();
      dir.cleanup();
    },
  };
  return h;
}

export type FiscalHarness = ReturnType<typeof buildFiscalCore>;

/** The durable commits from now until the end of the test, in order (the store's commit hook, released when the test ends). */
export function durableCommitsFromNow(): DurableStep[] {
  const durable: DurableStep[] = [];
  observeDurableCommits((step) => durable.push(step));
  onTestFinished(() => observeDurableCommits(null));
  return durable;
}

/**
 * After a crash that left the sale receipt of `orderId` claimed (sending, one attempt) and a restart:
 * the receipt is `unknown` (the register is asked by its key first), the next pass issues it on
 * the second attempt, and the register holds one receipt.
 */
export async function askedByKeyThenOneReceipt(h: FiscalHarness, orderId: number): Promise<void> {
  expect(h.receipts(orderId)[0]).toMatchObject({ state: 'unknown' });
  await h.pass();
  expect(h.receipts(orderId)[0]).toMatchObject({ state: 'issued', attempts: 2 });
  expect(h.register.held()).toHaveLength(1);
}
