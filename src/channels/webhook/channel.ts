import type { OrderRepository } from '../../orders/index.js';
import { createBackfill, type Backfill } from '../backfill.js';
import { createWebhookInbox, type WebhookInbox } from './inbox.js';
import { createWebhookServer, type WebhookServer } from './server.js';
import { createWebhookWorker, type WebhookWorker, type WebhookWorkerDeps } from './worker.js';
import { createClockSkewAlarm, type ClockSkew } from './clock-skew.js';
import { createBrokerIngest, type BrokerIngest } from './broker-ingest.js';
import type { BoundListener, ListenerLimits } from '../../util/http-listener.js';
import { httpFetch } from '../../util/http-fetch.js';

/** The worker's deps less what the channel builds itself (the inbox, and knowsInvoice from the orders). */
export interface WebhookChannelDeps extends Omit<WebhookWorkerDeps, 'inbox' | 'knowsInvoice'> {
  /** Which invoices are ours (a webhook for another invoice is kept, not worked). */
  orderRepository: Pick<OrderRepository, 'getByInvoice'>;
  /** Webhook signing secrets, all accepted (rotation). */
  secrets: readonly string[];
  /** The port, bound before the database was opened (see app.ts start order). */
  listener?: BoundListener;
  /** Told of a write the card refused (src/store/storage-health.ts). */
  storage?: { report(err: unknown): unknown };
  /** The device's one clock-skew state, also fed by the provider's API answers (app.ts); absent: its own. */
  clockSkew?: ClockSkew;
}

export interface WebhookChannelSettings {
  host: string;
  port: number;
  bodyLimitBytes: number;
  toleranceSec: number;
  retryBaseMs: number;
  retryMaxMs: number;
  alarmAfterAttempts: number;
  silenceGraceSec: number;
  backfillLookbackSec: number;
  /** The catch-up's first wait after a failed read (createBackfill's retryBaseMs); absent: its default. */
  backfillRetryBaseMs?: number;
  limits?: ListenerLimits;
}

/** A signed webhook the embedded sandbox wants delivered to our own listener. */
export interface LocalDelivery {
  rawBody: Buffer;
  headers: Record<string, string>;
}

/** The webhook channel as app.ts wires it. */
export interface WebhookChannel {
  inbox: WebhookInbox;
  worker: WebhookWorker;
  backfill: Backfill;
  server: WebhookServer;
  /** Fleet mode: a webhook the relay carried over the broker, into the same inbox. */
  ingestFromBroker: BrokerIngest;
  /** The listener's base URL once started (http://127.0.0.1:<port> when bound to all interfaces). */
  url(): string | null;
  /** Listens, resumes the rows a crash left and starts the catch-up. */
  start(): Promise<{ url: string; port: number }>;
  /** The poller recorded a payment before any webhook did (the ledger wrapper calls this). */
  paymentPolled(invoiceId: string): void;
  /** POSTs a sandbox webhook to our own listener, so the demo exercises the same path as a tunnel. */
  deliverLocally(delivery: LocalDelivery): void;
  /** Listener, then backfill, then worker; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * The whole webhook channel as the app wires it: listener → inbox → worker, plus the Events
 * backfill. start() listens, resumes leftovers and catches up; stop() is safe twice.
 */
export function createWebhookChannel(deps: WebhookChannelDeps, settings: WebhookChannelSettings): WebhookChannel {
  const { db, clock, provider } = deps;
  const log = deps.logger.child({ module: 'webhook' });
  const orders = deps.orderRepository;
  const knowsInvoice = (invoiceId: string) => orders.getByInvoice(invoiceId) !== undefined;
  const inbox: WebhookInbox = createWebhookInbox(db, { knowsInvoice });
  const worker: WebhookWorker = createWebhookWorker(
    {
      ...deps,
      inbox,
      knowsInvoice,
    },
    settings,
  );
  const backfill: Backfill = createBackfill(
    { ...deps, inbox, onInserted: () => worker.notify() },
    {
      silenceGraceSec: settings.silenceGraceSec,
      lookbackSec: settings.backfillLookbackSec,
      retryBaseMs: settings.backfillRetryBaseMs,
    },
  );
  const clockSkew = deps.clockSkew ?? createClockSkewAlarm({ db: deps.db, outbox: deps.outbox });
  // The tunnel's listener and the broker's deliveries verify the same way into the same inbox.
  const intake = {
    provider,
    inbox,
    clock,
    logger: deps.logger,
    secrets: deps.secrets,
    toleranceSec: settings.toleranceSec,
    onAccepted: () => worker.notify(),
    onDelivered: () => backfill.webhookReceived(),
  };
  const server: WebhookServer = createWebhookServer(
    {
      ...intake,
      listener: deps.listener,
      onStoreFailed: (err) => deps.storage?.report(err),
      onClockSkew: (skewSec) => clockSkew.observe(skewSec),
    },
    settings,
  );
  // Fleet mode: webhooks the relay carried over the broker, into the same inbox with the same dedupe.
  const ingestFromBroker = createBrokerIngest(intake);
  let url: string | null = null;
  let stopping: Promise<void> | null = null;

  return {
    inbox,
    worker,
    backfill,
    server,
    ingestFromBroker,
    /** The listener's base URL once started (http://127.0.0.1:<port> when bound to all interfaces). */
    url: () => url,
    async start(): Promise<{ url: string; port: number }> {
      const listening = await server.start();
      url = listening.url;
      worker.start();
      backfill.start();
      return listening;
    },
    /** The poller recorded a payment before any webhook did (the ledger wrapper calls this). */
    paymentPolled(invoiceId: string): void {
      backfill.paymentPolled(invoiceId);
    },
    /** POSTs a sandbox webhook to our own listener, so the demo exercises the same path as a tunnel. */
    deliverLocally(delivery: LocalDelivery): void {
      if (!url || stopping) {
        log.debug('sandbox webhook before the listener is up: the backfill picks it up');
        return;
      }
      // node:http, as the provider clients: Node's fetch would load undici for the demo alone (util/http-fetch.ts).
      httpFetch(`${url}/webhooks/${provider.name}`, { method: 'POST', headers: delivery.headers, body: delivery.rawBody })
        .then((response) =>
          response.text().then(() => {
            if (response.status < 200 || response.status > 299)
              log.warn({ status: response.status }, 'own listener refused a sandbox webhook');
          }),
        )
        .catch((err: unknown) => log.debug({ err }, 'sandbox webhook not delivered; the poller covers it'));
    },
    stop(): Promise<void> {
      stopping ??= (async () => {
        await server.stop();
        await backfill.stop();
        await worker.stop();
      })();
      return stopping;
    },
  };
}
