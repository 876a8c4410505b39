import type { Logger } from '../util/index.js';
import type { EbarimtSimulator } from './ebarimt-routes.js';
import type { EbarimtSimOptions } from './ebarimt-state.js';
import type { RegisterFaults } from './register-faults.js';
import type { WebkassaSimulator } from './webkassa-routes.js';
import type { WebkassaSimOptions } from './webkassa-state.js';

export const SIMULATED_PROVIDERS = ['gerege', 'qutpay', 'qpay', 'kaspi'] as const;
export type SimulatedProvider = (typeof SIMULATED_PROVIDERS)[number];

/**
 * Fault injection. Probabilities are 0..1 and are drawn from the seeded random source, so a run with
 * the same seed and the same sequence of calls injects the same faults.
 */
export interface FaultConfig {
  /** Deliver the same event twice (same id and body), one copy right after the other. */
  duplicateWebhook: number;
  /** Hold an event back and deliver it after the next one. */
  reorderWebhooks: number;
  /** Fixed extra delay before the first delivery attempt of every event (0 = none). Not a probability. */
  delayWebhookMs: number;
  /** Never deliver the event (no attempt at all). */
  dropWebhook: number;
  /** After an event is delivered, deliver again an OLDER event of the same object (same id and body). */
  lateStaleEvent: number;
  /** Answer 429 with `Retry-After: 1`. */
  rateLimit: number;
  /** Answer 500, 502 or 503. */
  serverError: number;
  /** Accept the request and never answer; the socket is held until the client gives up. */
  timeout: number;
  /** Commit the request (create, refund, cancel…), then destroy the socket without a response. */
  lostResponse: number;
  /** QutPay refunds: answer 502 refund_unknown or 504 refund_pending_unknown; whether the refund happened is drawn and recorded. */
  refundUnknown: number;
  /** While true every delivery attempt fails without reaching the receiver (tunnel down); retries go on. */
  webhookOutage: boolean;
}

export type FaultName = keyof FaultConfig;

export interface SimulatorOptions {
  provider: SimulatedProvider;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (ephemeral). */
  port?: number;
  /** Base of the pay URLs (QR codes) when the customer's phone reaches the simulator by another address. Default: the listening URL. */
  publicUrl?: string;
  /** Where webhooks are POSTed (e.g. http://127.0.0.1:8787/webhooks/gerege). Unset → no delivery. */
  webhookUrl?: string;
  /** Default 'whsec_simulator'. */
  webhookSecret?: string;
  /** Gerege OAuth2 client id, default 'sim-client'. */
  clientId?: string;
  /** Gerege OAuth2 client secret, default 'sim-secret'. */
  clientSecret?: string;
  /** QutPay API key, default 'qp_test_simulator'. */
  apiKey?: string;
  /** Default false. */
  livemode?: boolean;
  /** Seed of the random source for ids and faults, default 1. */
  seed?: number;
  /** Default Date.now. Expiry, token lifetime, event times and signature timestamps read it. */
  clock?: { now(): number };
  /** Gerege token lifetime, default 3600. */
  tokenTtlSec?: number;
  faults?: Partial<FaultConfig>;
  logger?: Logger;
  /** Waits between delivery attempts; the last one repeats. Default [100, 200, 400, 800, 1600, 3200, 6400]. */
  webhookRetryDelaysMs?: number[];
  /** Attempts per event, default 8 (Gerege) / 11 (QutPay). */
  webhookMaxAttempts?: number;
  /** Per-attempt timeout of a webhook POST, default 5000. */
  webhookTimeoutMs?: number;
  /** QPay: the invoice_code the merchant was assigned, default 'SIM_INVOICE_CODE'. */
  qpayInvoiceCode?: string;
  /** QPay: what a second `ebarimt_v3/create` for a payment with a receipt does (undocumented; default `create`). */
  qpayEbarimtRepeat?: QpayEbarimtRepeat;
  /** QPay: what a repeated sender_invoice_no gets (undocumented at QPay), default 'refuse'. */
  qpayDuplicateNumbers?: 'refuse' | 'first' | 'create';
  /** Kaspi: serve TLS and require a client certificate signed by `ca` (the strong scheme). Unset: plain HTTP with an Api-Key (the easy scheme). */
  kaspiTls?: { key: string | Buffer; cert: string | Buffer; ca: string | Buffer };
  /** Kaspi: the easy scheme's Api-Key (ignored with kaspiTls), default 'kaspi_sim_api_key'. */
  kaspiApiKey?: string;
  /** Kaspi: addresses allowed to call (others get 403); default: any. */
  kaspiWhitelist?: string[];
  /** Kaspi: the registered devices' tokens, default ['sim-device-token-1', 'sim-device-token-2']. */
  kaspiDeviceTokens?: string[];
  /** Kaspi: the merchant's BIN (remote/cancel names it), default '123456789012'. */
  kaspiOrganizationBin?: string;
  /** Kaspi: what a repeated ExternalId gets (undocumented at Kaspi), default 'create' (a second QR). */
  kaspiDuplicateExternalIds?: 'create' | 'refuse';
  /** Kaspi: how long a QR can be scanned, default 180. */
  kaspiQrLifetimeSec?: number;
  /** QutPay invoice lifetime (QutPay sets it, the request has no field for it), default 900. */
  invoiceTtlSec?: number;
  /** QutPay currency recorded for invoices (the wire format has none), default 'KZT'. */
  currency?: string;
  /** How often expiry is evaluated without any request arriving (0 = only lazily on reads), default 250. */
  expirySweepMs?: number;
  /**
   * Gerege: also serve `amount_refunded` (the sum of the intent's succeeded refunds) on intents. Not
   * in the wire format (a refund is a `re_…` object, seen as its event); off by default.
   */
  geregeAmountRefunded?: boolean;
  /** How long an event held back by `reorderWebhooks` waits for a next event before it is sent anyway, default 300. */
  reorderMaxHoldMs?: number;
  /** The simulated eBarimt PosAPI (always served: /rest/*, admin /__sim/ebarimt/*). */
  ebarimt?: EbarimtSimOptions & { faults?: Partial<RegisterFaults> };
  /** The simulated Webkassa-like register (always served: /api/v4/*, /api-history/v4/*, admin /__sim/webkassa/*). */
  webkassa?: WebkassaSimOptions & { faults?: Partial<RegisterFaults> };
}

export type CreateOutcome = 'created' | 'replayed' | 'conflict' | 'invalid' | `fault:${FaultName}`;

export interface InvoiceRecord {
  id: string;
  idempotencyKey: string | null;
  reference: string | null;
  amount: number;
  currency: string;
  /** The provider's own status word. */
  status: string;
  livemode: boolean;
  /** ms since epoch. */
  createdAt: number;
  captureMethod?: 'automatic' | 'manual';
  paidAt?: number;
  /** The create request body as received. */
  body: unknown;
}

export interface SimulatorRecords {
  invoices: InvoiceRecord[];
  createCalls: Array<{
    idempotencyKey: string | null;
    at: number;
    outcome: CreateOutcome;
    invoiceId?: string;
    /** For `fault:lostResponse`: what the dropped response would have said. */
    committed?: 'created' | 'replayed' | 'conflict' | 'invalid';
  }>;
  /** Every GET of an invoice / intent (including 404s). */
  getCalls: Array<{ id: string; at: number }>;
  /** Refunds that happened (money moved). */
  refunds: Array<{
    id: string;
    invoiceId: string;
    amount: number;
    idempotencyKey?: string;
    status: string;
    at: number;
    /** Set when the client was answered with an unknown outcome although the refund happened. */
    answeredUnknown?: 'refund_unknown' | 'refund_pending_unknown';
  }>;
  /** Every refund answered with an unknown outcome, and what really happened. */
  refundUnknown: Array<{
    invoiceId: string;
    idempotencyKey: string;
    amount: number;
    happened: boolean;
    refundId?: string;
    code: 'refund_unknown' | 'refund_pending_unknown';
    httpStatus: 502 | 504;
    at: number;
  }>;
  /**
   * One row per delivery attempt. `eventId` is the Gerege event id, or for QutPay the inbox key
   * `<invoice.id>:<status>`.
   */
  deliveries: Array<{
    eventId: string;
    type: string;
    objectId: string;
    attempt: number;
    at: number;
    status: number | 'error' | 'dropped';
    stale?: boolean;
    duplicate?: boolean;
  }>;
  /** Event bodies in creation order (Gerege events; QutPay webhook bodies). */
  events: unknown[];
  /** Every HTTP request served; `timeout`/`lost` when the fault left it without a response. */
  requests: Array<{ method: string; path: string; at: number; status: number | 'timeout' | 'lost' }>;
  /** QPay: every eBarimt receipt filed through `ebarimt_v3` (returned ones keep their row, with `returnedAt`). */
  qpayEbarimts: QpayEbarimtRecord[];
}

export interface SimulatorInfo {
  provider: SimulatedProvider;
  url: string;
  livemode: boolean;
  webhookUrl: string | null;
  webhookSecret: string;
  clientId?: string;
  clientSecret?: string;
  apiKey?: string;
  /** QPay: the invoice_code to configure. */
  invoiceCode?: string;
  /** Kaspi: what the fleet relay's Kaspi caller needs (the API key only in the easy scheme). */
  kaspi?: { scheme: 'strong' | 'easy'; apiKey?: string; deviceTokens: string[]; organizationBin: string };
}

export interface Simulator {
  /** Listens; resolves with the base URL (e.g. http://127.0.0.1:41234). */
  start(): Promise<{ url: string; port: number }>;
  /** Closes the server and cancels pending deliveries. Safe twice. */
  stop(): Promise<void>;
  /** Base URL once started ('' before). */
  readonly url: string;
  /** The fiscal registers served on the same URL: their state, faults and records. */
  readonly registers: { ebarimt: EbarimtSimulator; webkassa: WebkassaSimulator };
  /** Merges into the current faults; also POST /__sim/faults. Throws on an unknown key or bad value. */
  setFaults(f: Partial<FaultConfig>): void;
  /** QPay: the faults of the eBarimt route only (timeout before it files, lostResponse after, serverError, rateLimit). */
  setEbarimtFaults(f: Partial<FaultConfig>): void;
  /** The customer pays (Gerege: succeeded, or requires_capture for manual capture; QutPay: paid). */
  pay(id: string, opts?: { amount?: number }): Promise<void>;
  /** The deadline is now: an open invoice becomes expired (and its event is emitted). */
  expire(id: string): void;
  /** QutPay: the bank declines (pending → failed). Gerege has no such status and throws. */
  fail(id: string): void;
  /** The merchant refunds `amount` from the provider's dashboard (a refund this device did not ask for). */
  refundOutside(id: string, amount: number): void;
  /** Every GET of `id` answers with the object `otherId` (a faulty provider); null undoes it. */
  answerReadsWith(id: string, otherId: string | null): void;
  /**
   * Kaspi: only the status answer of `id` (payment/status, which names no QR) says `otherId`'s word;
   * its payment/details stay its own. Throws for the other providers. null undoes it.
   */
  answerStatusWith(id: string, otherId: string | null): void;
  /** Gerege: every issued token becomes invalid (the next call gets 401), to test token refresh. */
  revokeTokens(): void;
  /** Everything that happened, as a copy. */
  records(): SimulatorRecords;
  /**
   * The last event emitted that `match` accepts, as a copy, or null: what records().events.findLast
   * gives, without copying every record first. A bench that pays thousands of orders asks this once
   * an order; records() would clone all that happened so far each time, and the simulator's own
   * garbage collection then grew with the run's length.
   */
  lastEvent(match: (event: unknown) => boolean): unknown;
  /** Resolves when no delivery is pending or scheduled; rejects after timeoutMs (default 10000). */
  waitForDeliveriesIdle(timeoutMs?: number): Promise<void>;
  /** Base URL and credentials, for describeSimulator and tests. */
  info(): SimulatorInfo;
}

/** create: a second receipt for the payment; refuse: EBARIMT_ALREADY_REGISTERED; first: the first receipt again. */
export type QpayEbarimtRepeat = 'create' | 'refuse' | 'first';

export interface QpayEbarimtRecord {
  id: string;
  paymentId: string;
  receiptId: string;
  receiverType: string;
  districtCode: string;
  classificationCode: string;
  at: number;
  returnedAt: number | null;
}
