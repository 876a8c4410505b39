import { createSimulator, type FaultConfig, type Simulator } from '../../../src/simulator/index.js';
import type { Clock } from '../../../src/util/clock.js';
import { freePort, startService, type Service } from '../../helpers/service.js';
import { startOutageProxy, type OutageProxy } from '../../helpers/outage-proxy.js';
import { waitFor } from '../../helpers/wait.js';
import { KASPI_DEVICE_SECRET, startKaspiRelayFor } from '../../helpers/kaspi-relay.js';
import { callJson, type JsonAnswer } from '../../helpers/json-http.js';
import { readRows } from '../../helpers/database.js';

/** Order states nothing automatic leaves (invariant 3 in ARCHITECTURE.md allows vend_uncertain after a crash). */
export const SETTLED = ['vended', 'refunded', 'canceled', 'expired', 'failed', 'vend_uncertain'];

export interface OrderAnswer {
  orderId: number;
  state: string;
  invoiceId: string | null;
  reference: string;
}

export interface StackOptions {
  provider?: 'gerege' | 'qutpay' | 'qpay' | 'kaspi';
  config?: Record<string, unknown>;
  faults?: Partial<FaultConfig>;
  seed?: number;
  /** The simulator's clock (e.g. running behind, so an invoice expires sooner for the device). */
  simClock?: Clock;
  /** Put a TCP proxy between the service and the simulator, so a test can cut the provider off. */
  outage?: boolean;
  /** Or this HTTP proxy (test/helpers/http-proxy.ts: a lying Date header, refused paths), pointed at the simulator here. */
  httpProxy?: { url: string; target(url: string): void };
  /** Use this directory (a database restored from a backup copy); not removed by stop(). */
  dir?: string;
  /** Extra environment of the service (e.g. libfaketime's). */
  env?: Record<string, string>;
  /** How long a start (and each restart) may take to log ready; the service helper's default when absent. */
  readyTimeoutMs?: number;
}

/**
 * The real service (`node dist/main.js start`) against the Gerege or QutPay simulator in this
 * process: the simulator delivers signed webhooks to the service's webhook listener, the service
 * polls (and, for Gerege, reads the Events API) from the simulator — through an outage proxy when
 * `outage` is set.
 */
/** How many times the simulated Gerege delivers a webhook before it gives up (its real rule, docs/providers.md). */
export const GEREGE_WEBHOOK_ATTEMPTS = 8;

export async function startProviderStack(options: StackOptions = {}) {
  const providerName = options.provider ?? 'gerege';
  const webhookPort = await freePort();
  const sim: Simulator = createSimulator({
    provider: providerName,
    seed: options.seed ?? 1,
    webhookUrl: `http://127.0.0.1:${webhookPort}/webhooks/${providerName}`,
    // Gerege retries up to 8 times; these short waits keep a run brief while still outlasting a restart.
    webhookRetryDelaysMs: [100, 200, 400, 800, 1_600, 3_200, 6_400],
    ...(providerName === 'gerege' ? { webhookMaxAttempts: GEREGE_WEBHOOK_ATTEMPTS } : {}),
    webhookTimeoutMs: 2_000,
    ...(options.faults ? { faults: options.faults } : {}),
    ...(options.simClock ? { clock: options.simClock } : {}),
  });
  const { port: simPort } = await sim.start();
  const deviceId = String((options.config?.device as { id?: unknown } | undefined)?.id ?? 'chaos-001');
  // Kaspi: the device calls the fleet relay's Kaspi caller (in this process), which calls the simulator;
  // the outage proxy then stands for the relay being down (the device's only way to Kaspi).
  const kaspiRelay =
    providerName === 'kaspi'
      ? await startKaspiRelayFor(sim, {
          devices: new Map([[deviceId, { deviceToken: sim.info().kaspi!.deviceTokens[0]!, secrets: [KASPI_DEVICE_SECRET] }]]),
          kaspiTimeoutMs: 1_000,
        })
      : null;
  const upstreamPort = kaspiRelay ? Number(new URL(kaspiRelay.url).port) : simPort;
  const proxy: OutageProxy | null = options.outage ? await startOutageProxy({ port: upstreamPort }) : null;
  options.httpProxy?.target(sim.url);
  const info = sim.info();
  const credentials: { config: Record<string, unknown>; env: Record<string, string> } =
    providerName === 'gerege'
      ? { config: { clientId: info.clientId }, env: { VENDGATE_PROVIDER_CLIENT_SECRET: info.clientSecret! } }
      : providerName === 'kaspi'
        ? { config: {}, env: { VENDGATE_PROVIDER_CLIENT_SECRET: KASPI_DEVICE_SECRET } }
        : providerName === 'qpay'
          ? {
              // QPay calls each invoice's callback_url (unsigned): the device's own listener, as through a tunnel.
              config: {
                clientId: info.clientId,
                invoiceCode: info.invoiceCode,
                callbackUrl: `http://127.0.0.1:${webhookPort}/webhooks/qpay`,
              },
              env: { VENDGATE_PROVIDER_CLIENT_SECRET: info.clientSecret! },
            }
          : { config: {}, env: { VENDGATE_PROVIDER_API_KEY: info.apiKey! } };
  const serviceEnv = { ...credentials.env, VENDGATE_WEBHOOK_SECRETS: info.webhookSecret, ...options.env };
  let started: Service | undefined;
  try {
    started = await startService({
      webhookPort,
      ...(options.dir ? { dir: options.dir } : {}),
      ...(options.readyTimeoutMs ? { readyTimeoutMs: options.readyTimeoutMs } : {}),
      config: deepMerge(
        {
          // Kaspi QR charges in tenge.
          device: { id: 'chaos-001', ...(providerName === 'kaspi' ? { currency: 'KZT' } : {}) },
          provider: {
            name: providerName,
            baseUrl: proxy?.url ?? options.httpProxy?.url ?? kaspiRelay?.url ?? sim.url,
            ...credentials.config,
            invoiceTtlSec: 60,
            requestTimeoutMs: 1_000,
            createDeadlineMs: 15_000,
          },
          poll: { intervalMs: 100, maxBackoffMs: 2_000 },
          http: { webhook: { retryBaseMs: 100, retryMaxMs: 2_000, alarmAfterAttempts: 20, silenceGraceSec: 1 } },
          log: { level: 'info' },
        },
        options.config ?? {},
      ),
      env: serviceEnv,
    });
    // The start-up backfill first, so that a test decides which channel sees a payment first.
    if (providerName === 'gerege') {
      await waitFor(() => started!.logs().some((l) => l.msg === 'backfill done' && l.reason === 'start-up'), {
        timeoutMs: 15_000,
        what: 'the start-up backfill',
      });
    }
  } catch (err) {
    await started?.stop();
    await proxy?.stop();
    await kaspiRelay?.stop();
    await sim.stop();
    throw err;
  }
  const svc = started;

  /** A query on the service's database (read-only connection; WAL lets it read while the service writes). */
  const query = <T = Record<string, any>>(sql: string, ...params: unknown[]): T[] => readRows<T>(svc.dbPath, sql, ...params);

  async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<JsonAnswer> {
    // Every state-changing request to the local API is JSON ({} when there is nothing to say).
    return callJson(`${svc.localUrl}${path}`, method, method === 'POST' ? (body ?? {}) : body);
  }

  return {
    sim,
    svc,
    proxy,
    kaspiRelay,
    /** The secrets the service was started with (a restart with extra variables needs them too). */
    env: serviceEnv,
    query,
    call,
    /** A new order for `slot` on the local API (its answer); throws with the answer when it is not 201. */
    async placeOrder(slot = 'A1'): Promise<OrderAnswer & { expiresAt: string }> {
      const answer = await call('POST', '/api/orders', { slot });
      if (answer.status !== 201) throw new Error(`order refused: ${answer.status} ${JSON.stringify(answer.json)}`);
      return answer.json;
    },
    /** The order as the local API shows it; null while the service is down. */
    async order(orderId: number): Promise<OrderAnswer | null> {
      const answer = await call('GET', `/api/orders/${orderId}`).catch(() => null);
      return answer?.status === 200 ? (answer.json as OrderAnswer) : null;
    },
    /** Waits until the order is settled: vended, refunded, or uncertain for a person. */
    async waitSettled(orderId: number, timeoutMs = 30_000): Promise<OrderAnswer> {
      try {
        return await waitFor(
          async () => {
            const order = await this.order(orderId);
            return order && SETTLED.includes(order.state) ? order : null;
          },
          { timeoutMs, what: `order ${orderId} to settle` },
        );
      } catch (err) {
        // Say where it is stuck: the order, its ledger, vend job and refund, as the database has them.
        const detail = {
          order: query('SELECT id, state, invoice_id, error_message FROM orders WHERE id = ?', orderId),
          history: query('SELECT from_state, to_state, reason FROM order_history WHERE order_id = ? ORDER BY rowid', orderId),
          ledger: query('SELECT status, channel FROM invoice_status_ledger WHERE order_id = ? ORDER BY rowid', orderId),
          vend: query('SELECT state, outcome FROM vend_jobs WHERE order_id = ?', orderId),
          refunds: query('SELECT state, attempts, last_error FROM refunds WHERE order_id = ?', orderId),
        };
        throw new Error(`${(err as Error).message}\n${JSON.stringify(detail, null, 1)}`);
      }
    },
    /** Every actuation per order id, from the sim actuator log. */
    actuationsByOrder(): Map<number, number> {
      const counts = new Map<number, number>();
      for (const line of svc.readSimLog()) counts.set(line.orderId, (counts.get(line.orderId) ?? 0) + 1);
      return counts;
    },
    async stop(): Promise<void> {
      await svc.stop();
      await proxy?.stop();
      await kaspiRelay?.stop();
      await sim.stop();
    },
  };
}

/** The Gerege stack, as the chaos tests have always used it. */
export function startGeregeStack(options: Omit<StackOptions, 'provider'> = {}) {
  return startProviderStack({ ...options, provider: 'gerege' });
}

export type ProviderStack = Awaited<ReturnType<typeof startProviderStack>>;
export type GeregeStack = ProviderStack;

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    const bothObjects = [value, current].every((v) => typeof v === 'object' && v !== null && !Array.isArray(v));
    out[key] = bothObjects ? deepMerge(current as Record<string, unknown>, value as Record<string, unknown>) : value;
  }
  return out;
}

/** A small seeded generator (mulberry32), so a failing chaos run can be repeated with CHAOS_SEED. */
export function seededRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    chance: (p: number) => next() < p,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!,
  };
}
