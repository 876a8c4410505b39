import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { silentLogger, systemClock } from '../util/index.js';
import type { FaultConfig, Simulator, SimulatorInfo, SimulatorOptions, SimulatorRecords } from './types.js';
import type { ProviderBackend, SimContext } from './context.js';
import { NO_FAULTS, faultProblems } from './faults.js';
import { createRandom } from './random.js';
import { createWebhookDelivery } from './delivery.js';
import { createGeregeBackend } from './gerege-routes.js';
import { createQutpayBackend } from './qutpay-routes.js';
import { createQpayBackend } from './qpay-routes.js';
import { createKaspiBackend } from './kaspi-routes.js';
import { SIMULATED_PROVIDERS } from './types.js';
import { buildServer } from './server.js';
import { createEbarimtSimulator } from './ebarimt-routes.js';
import { createWebkassaSimulator } from './webkassa-routes.js';

export const SIMULATOR_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 0,
  webhookSecret: 'whsec_simulator',
  clientId: 'sim-client',
  clientSecret: 'sim-secret',
  apiKey: 'qp_test_simulator',
  seed: 1,
  tokenTtlSec: 3600,
  webhookRetryDelaysMs: [100, 200, 400, 800, 1600, 3200, 6400] as readonly number[],
  /** docs/providers.md: Gerege makes up to 8 attempts, QutPay retries 11 times. */
  /** QPay publishes no retry schedule for its callbacks: a few, as a hint needs no more. */
  webhookMaxAttempts: { gerege: 8, qutpay: 11, qpay: 3, kaspi: 0 },
  kaspiApiKey: 'kaspi_sim_api_key',
  kaspiDeviceTokens: ['sim-device-token-1', 'sim-device-token-2'] as readonly string[],
  kaspiOrganizationBin: '123456789012',
  kaspiQrLifetimeSec: 180,
  qpayInvoiceCode: 'SIM_INVOICE_CODE',
  webhookTimeoutMs: 5000,
  invoiceTtlSec: 900,
  currency: 'KZT',
  expirySweepMs: 250,
  reorderMaxHoldMs: 300,
});

/**
 * A Gerege- or QutPay-compatible provider on a real socket, with fault injection, and beside it the
 * two fiscal registers (eBarimt PosAPI, a Webkassa-like cloud register). See types.ts.
 */
export function createSimulator(options: SimulatorOptions): Simulator {
  if (!SIMULATED_PROVIDERS.includes(options.provider)) {
    throw new Error(`simulator provider must be one of ${SIMULATED_PROVIDERS.join(', ')}, got ${JSON.stringify(options.provider)}`);
  }
  const d = SIMULATOR_DEFAULTS;
  const provider = options.provider;
  const clock = options.clock ?? systemClock;
  const logger = (options.logger ?? silentLogger()).child({ module: 'simulator', provider });
  const seed = options.seed ?? d.seed;
  const livemode = options.livemode ?? false;
  const webhookSecret = options.webhookSecret ?? d.webhookSecret;
  const clientId = options.clientId ?? d.clientId;
  const clientSecret = options.clientSecret ?? d.clientSecret;
  const apiKey = options.apiKey ?? d.apiKey;
  const maxAttempts = options.webhookMaxAttempts ?? d.webhookMaxAttempts[provider];

  let faults: FaultConfig = { ...NO_FAULTS };
  const setFaults = (partial: Partial<FaultConfig>) => {
    const problems = faultProblems(partial);
    if (problems.length > 0) throw new Error(`invalid simulator faults: ${problems.join('; ')}`);
    faults = { ...faults, ...partial };
  };
  if (options.faults) setFaults(options.faults);
  let ebarimtFaults: FaultConfig = { ...NO_FAULTS };
  const setEbarimtFaults = (partial: Partial<FaultConfig>) => {
    const problems = faultProblems(partial);
    if (problems.length > 0) throw new Error(`invalid simulator faults: ${problems.join('; ')}`);
    ebarimtFaults = { ...ebarimtFaults, ...partial };
  };

  const records: SimulatorRecords = {
    invoices: [],
    createCalls: [],
    getCalls: [],
    refunds: [],
    refundUnknown: [],
    deliveries: [],
    events: [],
    requests: [],
    qpayEbarimts: [],
  };
  let baseUrl = '';
  let publicUrl = '';
  let port = 0;
  const faultRandom = createRandom((seed ^ 0x9e3779b9) >>> 0);
  const delivery = createWebhookDelivery({
    url: options.webhookUrl ?? null,
    headersFor: (event, nowMs) => backend.webhookHeaders(event, nowMs),
    maxAttempts,
    retryDelaysMs: options.webhookRetryDelaysMs ?? d.webhookRetryDelaysMs,
    timeoutMs: options.webhookTimeoutMs ?? d.webhookTimeoutMs,
    reorderMaxHoldMs: options.reorderMaxHoldMs ?? d.reorderMaxHoldMs,
    clock,
    random: faultRandom,
    faults: () => faults,
    records: records.deliveries,
    logger,
  });
  const ctx: SimContext = {
    clock,
    ids: createRandom(seed),
    // A second stream, so that turning a fault on does not change the ids of a seeded run.
    faultRandom,
    faults: () => faults,
    records,
    ebarimtFaults: () => ebarimtFaults,
    livemode,
    geregeAmountRefunded: options.geregeAmountRefunded ?? false,
    baseUrl: () => publicUrl,
    emit: (event, body) => {
      records.events.push(body);
      delivery.enqueue(event);
    },
  };
  const backend: ProviderBackend =
    provider === 'gerege'
      ? createGeregeBackend(ctx, { clientId, clientSecret, webhookSecret, tokenTtlSec: options.tokenTtlSec ?? d.tokenTtlSec, maxAttempts })
      : provider === 'kaspi'
        ? createKaspiBackend(ctx, {
            deviceTokens: options.kaspiDeviceTokens ?? d.kaspiDeviceTokens,
            apiKey: options.kaspiTls ? null : (options.kaspiApiKey ?? d.kaspiApiKey),
            whitelist: options.kaspiWhitelist ?? [],
            organizationBin: options.kaspiOrganizationBin ?? d.kaspiOrganizationBin,
            duplicateExternalIds: options.kaspiDuplicateExternalIds ?? 'create',
            qrLifetimeSec: options.kaspiQrLifetimeSec ?? d.kaspiQrLifetimeSec,
            currency: options.currency ?? d.currency,
            maxAttempts,
          })
        : provider === 'qpay'
          ? createQpayBackend(ctx, {
              clientId,
              clientSecret,
              tokenTtlSec: options.tokenTtlSec ?? d.tokenTtlSec,
              invoiceCode: options.qpayInvoiceCode ?? d.qpayInvoiceCode,
              duplicateNumbers: options.qpayDuplicateNumbers ?? 'refuse',
              ...(options.qpayEbarimtRepeat ? { ebarimtRepeat: options.qpayEbarimtRepeat } : {}),
              currency: options.currency ?? 'MNT',
              maxAttempts,
            })
          : createQutpayBackend(ctx, {
              apiKey,
              webhookSecret,
              maxAttempts,
              invoiceTtlSec: options.invoiceTtlSec ?? d.invoiceTtlSec,
              currency: options.currency ?? d.currency,
            });

  // The fiscal registers: served on the same socket beside the provider (their paths do not meet),
  // with faults and fault draws of their own, so that a provider fault never touches receipts.
  const registers = {
    ebarimt: createEbarimtSimulator(clock, options.ebarimt),
    webkassa: createWebkassaSimulator(clock, options.webkassa),
  };
  const registerRandom = createRandom((seed ^ 0x5bd1e995) >>> 0);

  let app: FastifyInstance | null = null;
  let sweepTimer: NodeJS.Timeout | null = null;
  let phase: 'new' | 'started' | 'stopped' = 'new';
  const heldSockets = new Set<Socket>();
  const snapshot = (): SimulatorRecords => structuredClone(records);

  return {
    get url() {
      return baseUrl;
    },

    async start() {
      if (phase !== 'new') throw new Error(`simulator cannot start: it is already ${phase}`);
      phase = 'started';
      app = buildServer({
        ctx,
        backend,
        logger,
        heldSockets,
        registers: [registers.ebarimt, registers.webkassa],
        registerRandom,
        ...(provider === 'kaspi' && options.kaspiTls ? { tls: options.kaspiTls } : {}),
        admin: { getFaults: () => ({ ...faults }), setFaults, records: snapshot },
      });
      const host = options.host ?? d.host;
      await app.listen({ host, port: options.port ?? d.port });
      const address = app.server.address();
      port = typeof address === 'object' && address ? address.port : 0;
      const scheme = provider === 'kaspi' && options.kaspiTls ? 'https' : 'http';
      baseUrl = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
      publicUrl = options.publicUrl?.replace(/\/+$/, '') ?? baseUrl;
      const sweepMs = options.expirySweepMs ?? d.expirySweepMs;
      if (sweepMs > 0) {
        // Expiry is evaluated on every read too; the timer only makes `expired` webhooks go out
        // when nobody is reading.
        sweepTimer = setInterval(() => backend.sweep(), sweepMs);
        sweepTimer.unref();
      }
      logger.info({ url: baseUrl, webhookUrl: options.webhookUrl ?? null }, 'simulator listening');
      return { url: baseUrl, port };
    },

    async stop() {
      if (phase === 'stopped') return;
      phase = 'stopped';
      if (sweepTimer) clearInterval(sweepTimer);
      delivery.stop();
      for (const socket of heldSockets) socket.destroy();
      heldSockets.clear();
      await app?.close();
    },

    registers,
    setFaults,
    setEbarimtFaults,
    async pay(id, opts) {
      backend.pay(id, opts?.amount);
    },
    expire: (id) => backend.expire(id),
    fail: (id) => backend.fail(id),
    revokeTokens: () => backend.revokeTokens(),
    refundOutside: (id, amount) => backend.refundOutside(id, amount),
    answerReadsWith: (id, otherId) => backend.answerReadsWith(id, otherId),
    answerStatusWith(id, otherId) {
      if (!backend.answerStatusWith) throw new Error(`answerStatusWith: ${provider} has no status-only read`);
      backend.answerStatusWith(id, otherId);
    },
    records: snapshot,
    lastEvent(match) {
      const found = records.events.findLast(match);
      return found === undefined ? null : structuredClone(found);
    },
    waitForDeliveriesIdle: (timeoutMs = 10_000) => delivery.waitIdle(timeoutMs),

    info(): SimulatorInfo {
      return {
        provider,
        url: baseUrl,
        livemode,
        webhookUrl: options.webhookUrl ?? null,
        webhookSecret,
        ...(provider === 'kaspi'
          ? {
              kaspi: {
                scheme: options.kaspiTls ? ('strong' as const) : ('easy' as const),
                ...(options.kaspiTls ? {} : { apiKey: options.kaspiApiKey ?? d.kaspiApiKey }),
                deviceTokens: [...(options.kaspiDeviceTokens ?? d.kaspiDeviceTokens)],
                organizationBin: options.kaspiOrganizationBin ?? d.kaspiOrganizationBin,
              },
            }
          : {}),
        ...(provider === 'gerege'
          ? { clientId, clientSecret }
          : provider === 'qpay'
            ? { clientId, clientSecret, invoiceCode: options.qpayInvoiceCode ?? d.qpayInvoiceCode }
            : { apiKey }),
      };
    },
  };
}
