/**
 * The contract between the core and every payment provider. Adapters translate provider words into
 * these types; they never decide anything about orders or vends.
 */

/** What the core sees. Ranked pending < authorized < paid < partially_refunded < refunded; pending < canceled|expired. */
export type CanonicalStatus = 'pending' | 'authorized' | 'paid' | 'canceled' | 'expired' | 'partially_refunded' | 'refunded';

export const CANONICAL_STATUSES: readonly CanonicalStatus[] = [
  'pending',
  'authorized',
  'paid',
  'canceled',
  'expired',
  'partially_refunded',
  'refunded',
];

export type ProviderName = 'sandbox' | 'gerege' | 'qutpay' | 'qpay' | 'kaspi';

export interface CreateInvoiceRequest {
  /** Derived from the order, identical on every retry of this attempt. */
  idempotencyKey: string;
  /** Our order reference (Gerege `reference`, QutPay `externalOrderId`). */
  reference: string;
  /** Smallest currency unit. */
  amount: number;
  currency: string;
  description: string;
  expiresInSec: number;
  captureMode: 'automatic' | 'manual';
}

export interface Invoice {
  /** Provider id: `pi_…` (Gerege), `inv_…` (QutPay), `sb_…` (sandbox). */
  id: string;
  status: CanonicalStatus;
  /** The provider's own word, for logs and evidence. */
  providerStatus: string;
  amount: number;
  currency: string;
  reference: string;
  livemode: boolean;
  /** What the QR encodes. */
  payUrl: string;
  /** ms since epoch. */
  expiresAt: number;
  /** The sum of the invoice's succeeded refunds, wherever they were made (absent or 0 when none). */
  refundedAmount?: number;
  /** ms since epoch the provider created it, when the provider says (Gerege `created`). */
  createdAt?: number;
  /** The description the provider holds, when it returns one. */
  description?: string;
  /** True when the provider answered a replayed idempotency key with an earlier object. */
  replayed?: boolean;
  /** Bank-app links for a customer whose phone is the payer (QPay `urls[]`): offered beside the QR. */
  appLinks?: { name: string; link: string }[];
}

export interface RefundRequest {
  invoiceId: string;
  amount: number;
  idempotencyKey: string;
}

export interface RefundResult {
  /** `unknown`: the provider could not say whether money moved; never retry, read the invoice. */
  status: 'succeeded' | 'pending' | 'failed' | 'unknown';
  refundId?: string;
  detail?: string;
}

/** How one call to the provider ended, as the HTTP client tells it (HttpClientDeps.onCall). */
export type ProviderCallOutcome = { ok: true } | { ok: false; error: unknown };

/** A verified webhook, before its object is re-read. */
export interface WebhookEvent {
  /** Dedupe key: Gerege `evt_…`; QutPay `<invoice.id>:<status>`. */
  eventId: string;
  type: string;
  /** The invoice / intent id the event is about (null for objects we do not track). */
  objectId: string | null;
  livemode: boolean | null;
  /** Unix ms the provider created the event, when it says. */
  createdAt: number | null;
  /**
   * A succeeded refund the event reports, when its object is one (Gerege `refund.succeeded`: a
   * `re_…` object with its `payment_intent` and `amount`). The intent itself does not say it was
   * refunded (docs/providers.md), so this is the evidence a refund was made, wherever it was made.
   */
  refund?: { id: string; amount: number };
  /** Our order reference on the invoice the event is about, when the body carries it (the orphan sweep). */
  reference?: string;
  /**
   * An unsigned hint (QPay's callback) deduplicated per time window must not be swallowed by an
   * earlier hint of the same window that was already worked (a forger's, say): when this event's id
   * is stored and processed, the inbox stores `later` instead, due at `notBefore` (the next window).
   * So every hint is followed by a read, and a flood still costs at most one read per window.
   */
  later?: { event: WebhookEvent; notBefore: number };
}

/**
 * The query string of the webhook request, as the listener served it (device or relay), handed to a
 * provider's verify under this header name; set by the listener, overwriting any header of that name
 * the caller sent. QPay names the order only in its callback URL.
 */
export const CALLBACK_QUERY_HEADER = 'x-vendgate-callback-query';

export interface VerifyContext {
  secrets: readonly string[];
  toleranceSec: number;
  /** ms since epoch. */
  now: number;
}

export interface EventPage {
  events: { event: WebhookEvent; rawBody: Buffer }[];
  hasMore: boolean;
}

/**
 * Which order a verified webhook concerns, as its provider's body says (for the fleet relay, which
 * routes by the order reference). `invoice`: the body names only the invoice (a Gerege refund), so
 * the reference must be read from the provider; `none`: the body names neither.
 */
export type WebhookTarget =
  | { kind: 'reference'; reference: string; invoiceId: string | null }
  | { kind: 'invoice'; invoiceId: string }
  | { kind: 'none'; reason: string };

/** A verified webhook: the event, and which secret signed it (during a rotation it tells when the old one can go). */
export interface VerifiedWebhook {
  event: WebhookEvent;
  /** Index into `VerifyContext.secrets` of the secret that matched; 0 where the scheme uses none of them. */
  secretIndex: number;
}

export interface PaymentProvider {
  readonly name: ProviderName;
  /** Creates the invoice, or returns the one already made with this key. Retries per the matrix. */
  createInvoice(request: CreateInvoiceRequest): Promise<Invoice>;
  /** The current state: the truth every decision is made from. */
  getInvoice(invoiceId: string): Promise<Invoice>;
  /** Idempotent by state. */
  cancelInvoice(invoiceId: string): Promise<Invoice>;
  /** Manual capture: take the held money after the vend succeeded. Idempotent by state. */
  captureInvoice(invoiceId: string): Promise<Invoice>;
  /** Never retried blindly: an unknown outcome is returned as `status: 'unknown'`. */
  refund(request: RefundRequest): Promise<RefundResult>;
  /**
   * Learns the outcome of a refund whose answer was lost, where the provider guarantees that the
   * same idempotency key and body return the same refund and never move money twice (Gerege).
   * Absent where a refund must never be sent again (QutPay): the invoice is read instead.
   */
  confirmRefund?(request: RefundRequest): Promise<RefundResult>;
  /**
   * Verifies a webhook on its raw bytes and parses it, saying which of `context.secrets` matched.
   * Throws WebhookVerificationError.
   */
  verifyWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>, context: VerifyContext): VerifiedWebhook;
  /** Events API paging (Gerege). Absent where the provider has none. */
  listEvents?(query: { createdAfterSec?: number; startingAfter?: string }): Promise<EventPage>;
  /** A read that proves the credentials work, without creating anything (selftest). */
  checkCredentials(): Promise<{ detail: string; serverDate?: number }>;
}

export type ProviderErrorKind =
  'network' | 'timeout' | 'rate_limited' | 'server' | 'conflict' | 'rejected' | 'not_found' | 'auth' | 'malformed' | 'processing';

/** Raised by adapters after the retry matrix gave up (or decided not to retry). */
export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  /** The provider's own error code, when it sent one. */
  readonly providerCode: string | undefined;
  readonly httpStatus: number | undefined;
  /** From Retry-After on 429. */
  readonly retryAfterMs: number | undefined;

  constructor(
    kind: ProviderErrorKind,
    message: string,
    options: { providerCode?: string; httpStatus?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'ProviderError';
    this.kind = kind;
    this.providerCode = options.providerCode;
    this.httpStatus = options.httpStatus;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** True when the same call may succeed later (the poller keeps going). */
  get transient(): boolean {
    return ['network', 'timeout', 'rate_limited', 'server', 'processing'].includes(this.kind);
  }
}

export class WebhookVerificationError extends Error {
  readonly reason: 'missing_signature' | 'bad_signature' | 'stale_timestamp' | 'malformed_body' | 'no_secrets';

  constructor(reason: WebhookVerificationError['reason'], message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

const RANK: Record<CanonicalStatus, number> = {
  pending: 0,
  authorized: 1,
  paid: 2,
  partially_refunded: 3,
  refunded: 4,
  canceled: 1,
  expired: 1,
};

/** True when `next` is a later status than `current` on the same path (used for logs and tests). */
export function isLaterStatus(current: CanonicalStatus, next: CanonicalStatus): boolean {
  return RANK[next] > RANK[current];
}

// Observations: one reading of an invoice as the core records it (the ledger's input). Here, beside
// the canonical types, so that every channel and the money path spell it the same way without
// importing the ledger.

export type Channel = 'poll' | 'webhook' | 'backfill' | 'create' | 'replay' | 'refund' | 'expiry' | 'cancel' | 'recovery' | 'reconcile';

/** One reading of an invoice's current state, from a GET (or the create / cancel response). */
export interface Observation {
  invoiceId: string;
  status: CanonicalStatus;
  providerStatus: string;
  livemode: boolean;
  amount: number;
  currency: string;
  /** What was refunded at the provider, by anyone (absent or 0 when nothing). */
  refundedAmount?: number;
  channel: Channel;
  /** The webhook event that led to the GET, when there was one. */
  eventId?: string;
}

/** The observation a read of `invoice` makes: one spelling for every channel. */
export function observationOf(invoice: Invoice, channel: Channel, eventId?: string): Observation {
  return {
    invoiceId: invoice.id,
    status: invoice.status,
    providerStatus: invoice.providerStatus,
    livemode: invoice.livemode,
    amount: invoice.amount,
    currency: invoice.currency,
    refundedAmount: invoice.refundedAmount ?? 0,
    channel,
    ...(eventId ? { eventId } : {}),
  };
}
