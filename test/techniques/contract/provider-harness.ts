/**
 * One adapter, built by createProvider from real settings, talking over loopback HTTP to the
 * provider simulator (its independent counterpart), with a fast fake sleep on a shared manual clock.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createManualClock, silentLogger, type Clock } from '../../../src/util/index.js';
import { parseSettings } from '../../../src/settings/index.js';
import { CALLBACK_QUERY_HEADER, createProvider, type CreateInvoiceRequest, type PaymentProvider } from '../../../src/payments/index.js';
import { createSimulator, NO_FAULTS, type FaultConfig, type Simulator, type SimulatorRecords } from '../../../src/simulator/index.js';
import { waitFor } from '../../helpers/wait.js';
import { cleanup, stop } from '../../helpers/cleanup.js';
import { startKaspiRelayFor, KASPI_DEVICE_SECRET } from '../../helpers/kaspi-relay.js';

export type ProviderUnderTest = 'gerege' | 'qutpay' | 'qpay' | 'kaspi';

export const WEBHOOK_SECRET = 'whsec_contract';
export const CURRENCY = 'KZT';
const CLIENT = { clientId: 'contract-client', clientSecret: 'contract-secret', apiKey: 'qp_test_contract' };

export interface HarnessOptions {
  /** Gerege token lifetime on the simulator. */
  tokenTtlSec?: number;
  /** A clock for the simulator other than the adapter's (default: they share one). */
  simClock?: Clock;
  /** Start a receiver and point the simulator's webhooks at it. */
  webhooks?: boolean;
  /** Build the adapter with credentials the simulator does not accept. */
  wrongCredentials?: boolean;
  faults?: Partial<FaultConfig>;
  seed?: number;
  /** Per-attempt timeout; short only where a test injects timeouts (a loaded CI machine is slow). Default 5000. */
  requestTimeoutMs?: number;
  /** QPay: what the simulator does with a repeated sender_invoice_no. */
  qpayDuplicateNumbers?: 'refuse' | 'first' | 'create';
  /** Kaspi: what the simulator does with a repeated ExternalId. */
  kaspiDuplicateExternalIds?: 'create' | 'refuse';
}

export interface CapturedWebhook {
  rawBody: Buffer;
  /** With the query string under CALLBACK_QUERY_HEADER, as the device's listener hands it to verify. */
  headers: IncomingHttpHeaders;
}

/**
 * What every contract case needs, whichever provider is under test: the adapter, and the provider's
 * side of the conversation (what it holds, what it emitted, the customer paying, an invoice running
 * out of time, the webhooks it delivered).
 */
export interface ContractHarness {
  provider: PaymentProvider;
  /** The adapter's clock; also the provider's unless `simClock` was given. */
  clock: ReturnType<typeof createManualClock>;
  /** The invoices the provider holds, with the idempotency key each was created with. */
  invoices(): { id: string; idempotencyKey: string | null }[];
  /** The body of every event the provider emitted, oldest first. */
  events(): unknown[];
  /** How many refunds the provider carried out (money moved). */
  refundsMade(): number;
  /** The customer pays on the provider's page (`amount`: only where the page lets them pay another sum). */
  pay(invoiceId: string, options?: { amount?: number }): Promise<void>;
  /** The invoice's time runs out at the provider. */
  expire(invoiceId: string): void;
  /** Webhooks the provider delivered, as the merchant's endpoint received them (with `webhooks: true`). */
  webhooks: CapturedWebhook[];
  /** Resolves once no webhook delivery (or retry of one) is in flight. */
  deliveriesIdle(): Promise<void>;
  stop(): Promise<void>;
}

/** An adapter over HTTP against the simulator: the contract harness plus the network's controls. */
export interface Harness extends ContractHarness {
  sim: Simulator;
  /** Every wait the retry matrix asked for, in ms. */
  delays: number[];
  /** Sets faults now and clears them once `calls` API calls (token calls not counted) have come back. */
  faultsForCalls(calls: number, faults: Partial<FaultConfig>): void;
  records(): SimulatorRecords;
  /** Simulator-recorded API requests whose path matches. */
  requestsTo(path: RegExp): SimulatorRecords['requests'];
  /** A second adapter on the same settings and simulator: the process after a restart (memory empty). */
  restartedProvider(): Promise<PaymentProvider>;
}

let sequence = 0;

/** A create request for a fresh order; the key is derived from the order as the core does. */
export function orderRequest(overrides: Partial<CreateInvoiceRequest> = {}): CreateInvoiceRequest {
  sequence += 1;
  return {
    idempotencyKey: `vm-001-db1-${sequence}-pay`,
    reference: `vm-001-${sequence}`,
    amount: 1500,
    currency: CURRENCY,
    description: 'Cola 0.5 l',
    expiresInSec: 120,
    captureMode: 'automatic',
    ...overrides,
  };
}

/** A fresh invoice, paid by the customer, then refunded by `amount` with the key the core derives. */
export async function refundPaidInvoice(h: ContractHarness, amount: number) {
  const invoice = await h.provider.createInvoice(orderRequest());
  await h.pay(invoice.id);
  const result = await h.provider.refund({ invoiceId: invoice.id, amount, idempotencyKey: `${invoice.reference}-refund` });
  return { invoice, result };
}

export async function startHarness(providerName: ProviderUnderTest, options: HarnessOptions = {}): Promise<Harness> {
  const clock = createManualClock();
  const webhooks: CapturedWebhook[] = [];
  const receiver = options.webhooks ? await startReceiver(webhooks) : undefined;
  const sim = createSimulator({
    provider: providerName,
    clock: options.simClock ?? clock,
    seed: options.seed ?? 7,
    currency: CURRENCY,
    webhookSecret: WEBHOOK_SECRET,
    ...CLIENT,
    webhookRetryDelaysMs: [20],
    expirySweepMs: 0,
    ...(options.tokenTtlSec !== undefined ? { tokenTtlSec: options.tokenTtlSec } : {}),
    ...(receiver ? { webhookUrl: `${receiver.url}/webhooks/${providerName}` } : {}),
    ...(options.faults ? { faults: options.faults } : {}),
    ...(options.qpayDuplicateNumbers ? { qpayDuplicateNumbers: options.qpayDuplicateNumbers } : {}),
    ...(options.kaspiDuplicateExternalIds ? { kaspiDuplicateExternalIds: options.kaspiDuplicateExternalIds } : {}),
  });
  const { url: simUrl } = await sim.start();
  // Kaspi: the adapter talks to the fleet relay's Kaspi caller, which calls the simulator.
  const relay =
    providerName === 'kaspi'
      ? await startKaspiRelayFor(sim, { now: () => clock.now(), kaspiTimeoutMs: options.requestTimeoutMs ?? 5_000 })
      : undefined;
  const url = relay?.url ?? simUrl;

  const delays: number[] = [];
  let faultCallsLeft = 0;
  const countingFetch: typeof fetch = async (input, init) => {
    const isApiCall = !/\/oauth2\/token|\/v2\/auth\//.test(String(input instanceof Request ? input.url : input));
    try {
      return await fetch(input, init);
    } finally {
      if (isApiCall && faultCallsLeft > 0 && --faultCallsLeft === 0) sim.setFaults({ ...NO_FAULTS });
    }
  };
  const credentials = options.wrongCredentials
    ? { clientId: CLIENT.clientId, clientSecret: 'not-the-secret', apiKey: 'qp_test_wrong' }
    : CLIENT;
  const settings = parseSettings({
    device: { id: 'vm-001', currency: CURRENCY, catalog: [{ slot: 'A1', name: 'Cola', price: 1500 }] },
    provider: {
      name: providerName,
      baseUrl: url,
      webhookSecrets: [WEBHOOK_SECRET],
      // Kaspi: the relay's own call to Kaspi times out first, so the relay answers before the device gives up.
      requestTimeoutMs: providerName === 'kaspi' ? (options.requestTimeoutMs ?? 5_000) + 5_000 : (options.requestTimeoutMs ?? 5_000),
      createDeadlineMs: 60_000,
      ...(providerName === 'kaspi'
        ? { clientSecret: options.wrongCredentials ? 'not-the-device-secret-at-all' : KASPI_DEVICE_SECRET }
        : providerName === 'qutpay'
          ? { apiKey: credentials.apiKey }
          : { clientId: credentials.clientId, clientSecret: credentials.clientSecret }),
      ...(providerName === 'qpay'
        ? { invoiceCode: 'SIM_INVOICE_CODE', callbackUrl: `${receiver?.url ?? 'http://127.0.0.1:9'}/webhooks/qpay` }
        : {}),
    },
  });
  const build = () =>
    createProvider(
      {
        clock,
        logger: silentLogger(),
        fetch: countingFetch,
        random: () => 0.5,
        sleep: async (ms) => {
          delays.push(ms);
          clock.advance(ms);
        },
      },
      settings,
    );
  const provider = await build();

  return {
    provider,
    sim,
    clock,
    delays,
    webhooks,
    faultsForCalls(calls, faults) {
      faultCallsLeft = calls;
      sim.setFaults(faults);
    },
    records: () => sim.records(),
    invoices: () => sim.records().invoices,
    events: () => sim.records().events,
    refundsMade: () => sim.records().refunds.length,
    pay: (invoiceId, payOptions) => sim.pay(invoiceId, payOptions),
    expire: (invoiceId) => sim.expire(invoiceId),
    deliveriesIdle: () => sim.waitForDeliveriesIdle(),
    requestsTo: (path) => sim.records().requests.filter((r) => path.test(r.path)),
    restartedProvider: build,
    async stop() {
      await relay?.stop();
      await sim.stop();
      await receiver?.stop();
    },
  };
}

/** The merchant's webhook endpoint: keeps the exact bytes and headers, answers 200. */
async function startReceiver(into: CapturedWebhook[]) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const query = (req.url ?? '').split('?')[1] ?? '';
      into.push({ rawBody: Buffer.concat(chunks), headers: { ...req.headers, [CALLBACK_QUERY_HEADER]: query } });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** For a describe: `start(options)` starts the harness for `providerName`, stopped after each test that started one. */
export function harnessPerTest(providerName: ProviderUnderTest): (options?: HarnessOptions) => Promise<Harness> {
  const defer = cleanup();
  return async (options = {}) => defer(await startHarness(providerName, options), stop);
}
