import type { FastifyRequest } from 'fastify';
import type { FaultConfig, FaultName, SimulatorRecords } from './types.js';
import type { Random } from './random.js';
import type { OutgoingEvent } from './delivery.js';

/** What every provider backend gets from the simulator. */
export interface SimContext {
  clock: { now(): number };
  /** Ids and tokens. Separate from fault draws so that turning a fault on does not change ids. */
  ids: Random;
  faultRandom: Random;
  faults(): FaultConfig;
  records: SimulatorRecords;
  livemode: boolean;
  /** Gerege intents also carry `amount_refunded` (not in the wire format; off by default). */
  geregeAmountRefunded: boolean;
  /** The listening base URL, for pay URLs. */
  baseUrl(): string;
  /** Records the event body and hands it to webhook delivery. */
  emit(event: OutgoingEvent, body: unknown): void;
  /** The faults of QPay's eBarimt route (`setEbarimtFaults`), apart from the provider's. */
  ebarimtFaults(): FaultConfig;
}

/** A handler's answer. Handlers are synchronous: the state is in memory and each call is atomic. */
export interface ApiResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Called when the lostResponse fault drops this (already committed) answer. */
  onLost?: () => void;
}

export interface ApiRoute {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  /**
   * false: faults never apply (the token route). A function: this route's own faults, apart from
   * the provider's (QPay's eBarimt route: turning on a payment fault never touches receipts).
   * Default true: the provider's faults.
   */
  faults?: boolean | (() => FaultConfig);
  handler(request: FastifyRequest): ApiResult;
  /** Called when a fault answered instead of the handler (nothing was committed). */
  onRejected?(fault: FaultName, request: FastifyRequest): void;
}

export interface PayPageView {
  id: string;
  status: string;
  amount: number;
  currency: string;
  reference: string | null;
  payable: boolean;
}

export interface ProviderBackend {
  readonly maxAttempts: number;
  errorBody(code: string, message: string): unknown;
  routes(): ApiRoute[];
  /** Lazy expiry: open invoices past their deadline become expired (and emit their event). */
  sweep(): void;
  pay(id: string, amount?: number): void;
  expire(id: string): void;
  fail(id: string): void;
  revokeTokens(): void;
  /** The merchant refunds from the provider's dashboard (not through this API's caller). */
  refundOutside(id: string, amount: number): void;
  /** Reads of `id` (GET) answer with the object `otherId` instead; null undoes it. A faulty provider. */
  answerReadsWith(id: string, otherId: string | null): void;
  /** Kaspi only: payment/status of `id` answers with `otherId`'s status, its details stay its own. */
  answerStatusWith?(id: string, otherId: string | null): void;
  /** What the pay page shows. `scanned`: the customer opened the page (Gerege: requires_payment → claimed). */
  view(id: string, scanned: boolean): PayPageView | undefined;
  webhookHeaders(event: OutgoingEvent, nowMs: number): Record<string, string>;
}

export function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
