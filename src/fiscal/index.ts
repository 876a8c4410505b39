/**
 * The fiscal part: one register port (types.ts), the receipts table (receipts.ts), the worker that
 * issues them exactly once (worker.ts), the operator's view (monitor.ts), and the registers: the
 * sandbox, eBarimt and Webkassa, each loaded only when configured.
 */
import type { Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import type { FiscalSettings } from '../settings/index.js';
import type { FiscalRegister } from './types.js';
import { createReceiptBook, type ReceiptBook, type SoldOrder } from './receipts.js';
import { createFiscalWorker, type FiscalWorker, type ScreenReceipt } from './worker.js';
import { createFiscalMonitor, type FiscalMonitor, type FiscalSnapshot } from './monitor.js';

export type * from './types.js';
// The sandbox register is imported from './sandbox.js' by whoever needs it (tests, the soak): re-exported here, every
// start would load it.
export type { SandboxRegister, SandboxRegisterRepeat, SandboxRegisterRow } from './sandbox.js';
export { createReceiptBook, dayIn, WAITING_STATES, type ReceiptBook, type ReceiptRow, type ReceiptState } from './receipts.js';
export { createFiscalWorker, type FiscalWorker, type ScreenReceipt } from './worker.js';
export { createFiscalMonitor, FISCAL_ALARMS, type FiscalMonitor, type FiscalSnapshot } from './monitor.js';

/**
 * The register the settings name: the sandbox (demo, tests), or null for `none` (no receipts).
 * eBarimt and Webkassa load with `import()` only when configured, so a machine that uses neither
 * never evaluates them.
 */
export async function createRegister(
  settings: {
    fiscal: FiscalSettings;
    storage: { path: string };
    /** The payment provider's settings: QPay's credentials for `register: qpay`. */
    provider?: { name: string; baseUrl?: string | undefined; clientId?: string | undefined; clientSecret?: string | undefined };
  },
  deps: { clock: Clock; logger: Logger },
): Promise<FiscalRegister | null> {
  const fiscal = settings.fiscal;
  switch (fiscal.register) {
    case 'none':
      return null;
    case 'sandbox': {
      const { createSandboxRegister, sandboxRegisterDbPath } = await import('./sandbox.js');
      return createSandboxRegister(
        { clock: deps.clock },
        {
          dbPath: sandboxRegisterDbPath(settings.storage.path),
          lostAnswerRate: fiscal.sandbox.lostAnswerRate,
          timeoutRate: fiscal.sandbox.timeoutRate,
          perSecond: fiscal.sandbox.perSecond,
          lotteryStock: fiscal.sandbox.lotteryStock,
        },
      );
    }
    // The real registers, each loaded only when configured (a machine that uses neither never
    // evaluates them). The settings' checks (sections/fiscal.ts) guarantee the fields they need.
    case 'ebarimt': {
      const e = fiscal.ebarimt;
      return (await import('./ebarimt/index.js')).createEbarimtRegister({
        baseUrl: required(e.url, 'fiscal.ebarimt.url'),
        merchantTin: required(e.merchantTin, 'fiscal.ebarimt.merchantTin'),
        posNo: required(e.posNo, 'fiscal.ebarimt.posNo'),
        branchNo: e.branchNo,
        districtCode: required(e.districtCode, 'fiscal.ebarimt.districtCode'),
        registration: { vatPayer: e.vatPayer, cityTax: e.cityTax },
        defaultClassificationCode: e.classificationCode,
        logger: deps.logger,
        clock: deps.clock,
      });
    }
    case 'qpay': {
      const q = fiscal.qpay;
      const p = settings.provider;
      return (await import('./qpay/index.js')).createQpayEbarimtRegister({
        baseUrl: required(p?.baseUrl, 'provider.baseUrl'),
        clientId: required(p?.clientId, 'provider.clientId'),
        clientSecret: required(p?.clientSecret, 'provider.clientSecret'),
        receiverType: q.receiverType,
        ...(q.receiver ? { receiver: q.receiver } : {}),
        districtCode: required(q.districtCode, 'fiscal.qpay.districtCode'),
        defaultClassificationCode: q.classificationCode,
        timeoutMs: q.timeoutMs,
        logger: deps.logger,
        clock: deps.clock,
      });
    }
    case 'webkassa': {
      const w = fiscal.webkassa;
      return (await import('./webkassa/index.js')).createWebkassaRegister({
        baseUrl: required(w.url, 'fiscal.webkassa.url'),
        apiKey: w.apiKey ?? null,
        ...(w.login ? { login: w.login } : {}),
        ...(w.password ? { password: w.password } : {}),
        ...(w.token ? { token: w.token } : {}),
        cashboxUniqueNumber: required(w.cashboxId, 'fiscal.webkassa.cashboxId'),
        vatPayer: w.vatPayer,
        offlineLimitMs: w.offlineHoursLimit * 3_600_000,
        logger: deps.logger,
        clock: deps.clock,
      });
    }
  }
}

/** A setting the schema's checks require for this register (a missing one is a bug, not a user error). */
function required(value: string | undefined, path: string): string {
  if (!value) throw new VendgateError(ErrorCodes.CONFIG_INVALID, `${path} is required for this register`);
  return value;
}

/**
 * The receipts table as the settings configure it, or null for `register: none`. For a process
 * that only writes rows (`vendgate resolve`): the running service's worker sends them.
 */
export function receiptBookFor(deps: { db: Db; clock: Clock; outbox: Outbox }, settings: FiscalSettings): ReceiptBook | null {
  if (settings.register === 'none') return null;
  return createReceiptBook(deps, {
    register: settings.register,
    timeZone: settings.timeZone,
    classificationCode:
      settings.register === 'ebarimt'
        ? settings.ebarimt.classificationCode
        : settings.register === 'qpay'
          ? settings.qpay.classificationCode
          : null,
  });
}

/** What vend/ is told inside its transactions (the port the money path takes). */
export interface ReceiptPort {
  sold(order: SoldOrder, soldAt: number): void;
  refunded(orderId: number): void;
}

export interface Fiscal {
  readonly register: FiscalRegister;
  /** For the money path: a sale or a refund queues its receipt in the caller's transaction. */
  readonly receipts: ReceiptPort;
  readonly book: ReceiptBook;
  readonly worker: FiscalWorker;
  readonly monitor: FiscalMonitor;
  /** Start-up, before the first pass: receipts left mid-call become unknown (asked about first). */
  recover(): number;
  /** The worker's timer (a pass, then the alarms). */
  start(): void;
  /** Stops the timer; the call in flight is recorded; the register is closed. */
  stop(): Promise<void>;
  screen(orderId: number): ScreenReceipt | null;
  snapshot(): FiscalSnapshot;
}

export interface FiscalDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
  register: FiscalRegister;
  /** Stops (detail) or resumes (null) new orders: the device's availability. */
  stopSales?: (detail: string | null) => void;
  /** A receipt came in: the screen follows. */
  onChange?: () => void;
  crashPoint?: (name: string) => void;
}

/** The fiscal part composed once; app.ts and the tests build it through here. */
export function createFiscal(deps: FiscalDeps, settings: FiscalSettings): Fiscal {
  const { db, clock, logger, outbox, register } = deps;
  const log = logger.child({ module: 'fiscal' });
  const book = createReceiptBook(
    { db, clock, outbox },
    {
      register: register.name,
      timeZone: settings.timeZone,
      classificationCode:
        settings.register === 'ebarimt'
          ? settings.ebarimt.classificationCode
          : settings.register === 'qpay'
            ? settings.qpay.classificationCode
            : null,
    },
  );
  const worker = createFiscalWorker(
    {
      db,
      clock,
      logger,
      outbox,
      register,
      book,
      ...(deps.onChange ? { onChange: deps.onChange } : {}),
      ...(deps.crashPoint ? { crashPoint: deps.crashPoint } : {}),
    },
    { lookupEveryMs: settings.lookupEveryMs, retryMaxMs: settings.retryMaxMs },
  );
  const monitorSettings = { ...settings, offlineHoursLimit: settings.webkassa.offlineHoursLimit };
  const monitor = createFiscalMonitor(
    { db, clock, logger, outbox, register, book, worker, ...(deps.stopSales ? { stopSales: deps.stopSales } : {}) },
    monitorSettings,
  );
  let timer: NodeJS.Timeout | null = null;
  let kicked: NodeJS.Immediate | null = null;
  let started = false;

  const pass = () =>
    worker
      .run()
      .then(() => monitor.check())
      .catch((err: unknown) => log.error({ err }, 'fiscal pass failed; tried again at the next tick'));
  /** After the caller's transaction: the vend never waits for the register. */
  const kick = () => {
    if (!started || kicked) return;
    kicked = setImmediate(() => {
      kicked = null;
      void pass();
    });
  };

  return {
    register,
    book,
    worker,
    monitor,
    receipts: {
      sold(order, soldAt) {
        // The first call's claim rides on the vend's settle commit when that commit is durable
        // (synchronous=FULL: the vend's own settle, not a person's resolve) and the worker will call
        // the register at once: one fsync per sale fewer. Otherwise the row is queued and claimed
        // in a commit of its own before the call.
        const claim = started && db.pragma('synchronous', { simple: true }) === 2 && worker.mayClaimWithSale();
        const id = book.sold(order, soldAt, claim ? clock.now() : undefined);
        if (claim && id !== null) worker.claimedWithSale(id, `${order.reference}-sale`);
        kick();
      },
      refunded(orderId) {
        book.refunded(orderId);
        kick();
      },
    },
    recover: () => worker.recover(),
    start() {
      if (timer) return;
      started = true;
      void pass();
      timer = setInterval(() => void pass(), settings.intervalMs);
      timer.unref();
    },
    async stop() {
      started = false;
      if (timer) clearInterval(timer);
      if (kicked) clearImmediate(kicked);
      timer = null;
      await worker.stop();
      await register.close?.();
    },
    screen: (orderId) => worker.screen(orderId),
    snapshot: () => monitor.snapshot(),
  };
}
