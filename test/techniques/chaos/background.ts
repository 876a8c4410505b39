import { afterEach, beforeEach } from 'vitest';
import { join } from 'node:path';
import { createApp, type App } from '../../../src/app.js';
import type { Actuator, VendOutcome, VendRequest } from '../../../src/hardware/index.js';
import { createSandboxProvider, type SandboxProvider } from '../../../src/payments/sandbox/index.js';
import { ProviderError, type PaymentProvider } from '../../../src/payments/types.js';
import { systemClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/logger.js';
import type { Db } from '../../../src/store/open.js';
import { testSettings } from '../../helpers/core.js';
import { tempDir } from '../../helpers/temp.js';

/**
 * An outage is a state, not a crash: each background task of the real app (createApp) has its work
 * fail twice in a row, and the process neither rejects unheard nor throws uncaught, and the task runs
 * again by itself and does its work. The failures are injected at the provider boundary: the
 * sandbox provider behind a wrapper that refuses the next N calls of a method as a refused
 * connection would (nothing sent). The sandbox is ours, not the app's, so no webhook is delivered:
 * the poller is the only way the app learns of a payment.
 */

type Faulted = 'getInvoice' | 'listEvents' | 'createInvoice' | 'checkCredentials';

export function faultyProvider(inner: PaymentProvider) {
  const pending: Partial<Record<Faulted, number>> = {};
  const thrown: Partial<Record<Faulted, number>> = {};
  const calls: Partial<Record<Faulted, number>> = {};
  const gate = (method: Faulted) => {
    calls[method] = (calls[method] ?? 0) + 1;
    if ((pending[method] ?? 0) > 0) {
      pending[method]! -= 1;
      thrown[method] = (thrown[method] ?? 0) + 1;
      throw new ProviderError('network', `injected: connect ECONNREFUSED (${method})`);
    }
  };
  const provider: PaymentProvider = {
    ...inner,
    createInvoice: async (request) => (gate('createInvoice'), inner.createInvoice(request)),
    getInvoice: async (id) => (gate('getInvoice'), inner.getInvoice(id)),
    cancelInvoice: (id) => inner.cancelInvoice(id),
    captureInvoice: (id) => inner.captureInvoice(id),
    refund: (request) => inner.refund(request),
    verifyWebhook: (body, headers, context) => inner.verifyWebhook(body, headers, context),
    listEvents: async (query) => (gate('listEvents'), inner.listEvents!(query)),
    checkCredentials: async () => (gate('checkCredentials'), inner.checkCredentials()),
  };
  return { provider, pending, thrown, calls };
}

/** An actuator that reports "nothing delivered" while `failing` says so, and delivers otherwise. */
export function scriptedActuator(onFailure: () => void) {
  const actuator = {
    kind: 'sim' as const,
    failNext: 0,
    fired: [] as VendRequest[],
    async start() {},
    async fire(request: VendRequest): Promise<VendOutcome> {
      actuator.fired.push(request);
      if (actuator.failNext > 0) {
        actuator.failNext -= 1;
        onFailure();
        return { result: 'failed', reason: 'injected: the machine did not take the vend' };
      }
      return { result: 'vended' };
    },
    health: () => ({ ok: true, detail: 'scripted' }),
    async stop() {},
  } satisfies Actuator & Record<string, unknown>;
  return actuator;
}

/**
 * The next `times` writes matching `when` on `table` fail as a lock another process holds past the
 * busy timeout would (SQLITE_BUSY: the CLI writing, a backup reading): a temporary trigger on the
 * app's own connection calls a function that throws, then lets writes through. Returns how many
 * failed so far.
 */
export function failWrites(
  db: Db,
  name: string,
  trigger: string | string[],
  times: number,
  code = 'SQLITE_BUSY',
): { failed: () => number } {
  let failed = 0;
  db.function(`${name}_fault`, () => {
    if (failed >= times) return 0;
    failed += 1;
    throw Object.assign(new Error(`${code} (injected: ${name})`), { code });
  });
  [trigger].flat().forEach((when, i) => db.exec(`CREATE TEMP TRIGGER ${name}_${i} ${when} BEGIN SELECT ${name}_fault(); END`));
  return { failed: () => failed };
}

/**
 * The real app over a sandbox provider behind `faultyProvider`, with the scripted actuator, and a
 * process-wide listener for unhandled rejections and uncaught exceptions (`crashes`). Call inside a
 * describe(): it registers the hooks that stop the app and remove the listeners.
 */
export function backgroundApp() {
  let app: App | null = null;
  let sandbox: SandboxProvider | null = null;
  let dir: ReturnType<typeof tempDir> | null = null;
  const crashes: unknown[] = [];
  const onCrash = (err: unknown) => crashes.push(err);

  beforeEach(() => {
    ahead = 0;
    crashes.length = 0;
    process.on('unhandledRejection', onCrash);
    process.on('uncaughtException', onCrash);
  });
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await app?.stop();
    for (const cleanup of cleanups.splice(0)) await cleanup();
    app = null;
    sandbox?.close();
    sandbox = null;
    dir?.cleanup();
    dir = null;
    process.off('unhandledRejection', onCrash);
    process.off('uncaughtException', onCrash);
  });

  // The app's wall clock, which a test may move ahead (the reconciler compares settled sales only).
  let ahead = 0;
  const clock = { now: () => Date.now() + ahead, monotonic: () => performance.now() };

  async function start(
    setup: (faults: ReturnType<typeof faultyProvider>) => void = () => {},
    overrides: Parameters<typeof testSettings>[1] = {},
    patch: (settings: ReturnType<typeof testSettings>) => ReturnType<typeof testSettings> = (settings) => settings,
  ) {
    dir = tempDir();
    sandbox = createSandboxProvider(
      { clock: systemClock, logger: silentLogger() },
      { dbPath: join(dir.path, 'sandbox.db'), payUrl: (id) => `http://127.0.0.1/sandbox/pay/${id}`, webhookSecret: 'bg-secret' },
    );
    const faults = faultyProvider(sandbox.provider);
    setup(faults);
    const actuator = scriptedActuator(() => {
      // The vend failed: the refund worker's first reads of the invoice (before it sends) fail twice.
      faults.pending.getInvoice = 2;
    });
    app = createApp(patch(testSettings(dir.path, { ...overrides, provider: { webhookSecrets: ['bg-secret'] } })), {
      logger: silentLogger(),
      provider: faults.provider,
      actuator,
      clock,
      // An outage here lasts two failures: the retries whose timing is no setting come in
      // milliseconds rather than seconds (the Events API catch-up's 5 s, the storage recheck's 2 s),
      // so each case waits out its outage in well under a second. Long enough for the storage
      // fault's state to be seen between two rechecks (its case asks for a 503 meanwhile).
      retryTimings: { backfillRetryBaseMs: 50, storageRecheckMs: 250 },
    });
    const { localUrl } = await app.start();
    const order = async () => {
      const response = await fetch(`${localUrl}/api/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"slot":"A1"}',
      });
      return { status: response.status, body: (await response.json()) as { orderId: number; invoiceId: string } };
    };
    return { ctx: app.context(), faults, actuator, order, sandbox };
  }

  return {
    start,
    crashes,
    /** Run after the app stops (brokers the test started). */
    cleanups,
    /** Moves the app's wall clock ahead. */
    setAhead(ms: number) {
      ahead = ms;
    },
  };
}
