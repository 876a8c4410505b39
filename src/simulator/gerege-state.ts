import type { InvoiceRecord } from './types.js';
import type { SimContext } from './context.js';
import { SimHttpError, checkObjectBody, isPositiveInteger } from './request-checks.js';

export type IntentStatus = 'requires_payment' | 'claimed' | 'processing' | 'requires_capture' | 'succeeded' | 'canceled' | 'expired';

/** Statuses in which the customer has not paid yet: these can expire, be paid, or be canceled. */
const OPEN: ReadonlySet<IntentStatus> = new Set(['requires_payment', 'claimed', 'processing']);

export interface Intent {
  id: string;
  status: IntentStatus;
  amount: number;
  currency: string;
  reference: string;
  captureMethod: 'automatic' | 'manual';
  /** Unix seconds. */
  expiresAt: number;
  created: number;
  record: InvoiceRecord;
}

export interface GeregeRefund {
  id: string;
  intentId: string;
  amount: number;
  status: 'succeeded';
}

export interface CreateFields {
  amount: number;
  currency: string;
  reference: string;
  captureMethod: 'automatic' | 'manual';
  expiresIn: number;
}

const CREATE_FIELDS = ['amount', 'currency', 'reference', 'description', 'capture_method', 'expires_in'] as const;
export const DEFAULT_EXPIRES_IN_SEC = 900;

/** Checks a create body; every problem is listed in one 400. */
export function parseCreateBody(body: unknown): CreateFields {
  const b = checkObjectBody(body, CREATE_FIELDS);
  const problems: string[] = [];
  if (!isPositiveInteger(b.amount)) problems.push('amount: a positive integer in the smallest currency unit is required');
  if (typeof b.currency !== 'string' || !/^[A-Z]{3}$/.test(b.currency))
    problems.push('currency: a three-letter upper-case ISO 4217 code is required');
  if (typeof b.reference !== 'string' || b.reference.length < 1 || b.reference.length > 128)
    problems.push('reference: a string of 1-128 characters is required');
  if (b.description !== undefined && (typeof b.description !== 'string' || b.description.length > 1000))
    problems.push('description: must be a string of at most 1000 characters');
  if (b.capture_method !== undefined && b.capture_method !== 'automatic' && b.capture_method !== 'manual')
    problems.push('capture_method: must be "automatic" or "manual"');
  if (b.expires_in !== undefined && (!Number.isInteger(b.expires_in) || (b.expires_in as number) < 1 || (b.expires_in as number) > 86_400))
    problems.push('expires_in: must be an integer number of seconds 1-86400');
  if (problems.length > 0) throw new SimHttpError(400, 'invalid_request', problems.join('; '));
  return {
    amount: b.amount as number,
    currency: b.currency as string,
    reference: b.reference as string,
    captureMethod: (b.capture_method as 'automatic' | 'manual' | undefined) ?? 'automatic',
    expiresIn: (b.expires_in as number | undefined) ?? DEFAULT_EXPIRES_IN_SEC,
  };
}

/** Gerege payment intents, refunds and events, in memory. HTTP lives in gerege-routes.ts. */
export function createGeregeState(ctx: SimContext) {
  const intents = new Map<string, Intent>();
  const refunds = new Map<string, GeregeRefund>();
  const open = new Set<Intent>();
  const events: Array<{ id: string; created: number; body: unknown }> = [];

  const nowSec = () => Math.floor(ctx.clock.now() / 1000);

  function intentJson(intent: Intent) {
    return {
      id: intent.id,
      object: 'payment_intent',
      status: intent.status,
      amount: intent.amount,
      currency: intent.currency,
      reference: intent.reference,
      livemode: ctx.livemode,
      pay_url: `${ctx.baseUrl()}/__sim/pay/${intent.id}`,
      expires_at: intent.expiresAt,
      created: intent.created,
      // Not in the wire format (docs/providers.md: a refund is a `re_…` object, seen as its event): served
      // only with the `geregeAmountRefunded` option, so tests exercise the format as written.
      ...(ctx.geregeAmountRefunded ? { amount_refunded: refundedAmount(intent.id) } : {}),
    };
  }

  function refundedAmount(intentId: string): number {
    let sum = 0;
    for (const refund of refunds.values()) if (refund.intentId === intentId && refund.status === 'succeeded') sum += refund.amount;
    return sum;
  }

  function refundJson(refund: GeregeRefund) {
    return { id: refund.id, object: 'refund', payment_intent: refund.intentId, amount: refund.amount, status: refund.status };
  }

  function emit(type: string, object: { id: string }) {
    const body = {
      id: `evt_${ctx.ids.token(24)}`,
      object: 'event',
      type,
      livemode: ctx.livemode,
      created: nowSec(),
      data: { object },
    };
    events.push({ id: body.id, created: body.created, body });
    ctx.emit({ eventId: body.id, type, objectId: object.id, body: JSON.stringify(body) }, body);
  }

  function transition(intent: Intent, status: IntentStatus) {
    intent.status = status;
    intent.record.status = status;
    if (OPEN.has(status)) open.add(intent);
    else open.delete(intent);
    if ((status === 'succeeded' || status === 'requires_capture') && intent.record.paidAt === undefined) {
      intent.record.paidAt = ctx.clock.now();
    }
    emit(`payment_intent.${status}`, intentJson(intent));
  }

  function find(id: string): Intent {
    const intent = intents.get(id);
    if (!intent) throw new SimHttpError(404, 'not_found', `no payment intent ${id}`);
    return intent;
  }

  function sweep() {
    const now = ctx.clock.now();
    for (const intent of [...open]) if (now >= intent.expiresAt * 1000) transition(intent, 'expired');
  }

  return {
    intentJson,
    refundJson,
    sweep,
    get: (id: string) => find(id),
    getRefund: (id: string) => refunds.get(id),

    create(idempotencyKey: string, body: unknown, fields: CreateFields): Intent {
      const created = nowSec();
      const id = `pi_${ctx.ids.token(24)}`;
      const record: InvoiceRecord = {
        id,
        idempotencyKey,
        reference: fields.reference,
        amount: fields.amount,
        currency: fields.currency,
        status: 'requires_payment',
        livemode: ctx.livemode,
        createdAt: ctx.clock.now(),
        captureMethod: fields.captureMethod,
        body,
      };
      const intent: Intent = {
        id,
        status: 'requires_payment',
        amount: fields.amount,
        currency: fields.currency,
        reference: fields.reference,
        captureMethod: fields.captureMethod,
        expiresAt: created + fields.expiresIn,
        created,
        record,
      };
      intents.set(id, intent);
      open.add(intent);
      ctx.records.invoices.push(record);
      emit('payment_intent.created', intentJson(intent));
      return intent;
    },

    /** Idempotent by state: terminal and already-canceled intents are returned as they are. */
    cancel(intent: Intent) {
      if (OPEN.has(intent.status) || intent.status === 'requires_capture') transition(intent, 'canceled');
      return intent;
    },

    capture(intent: Intent) {
      if (intent.status === 'requires_capture') transition(intent, 'succeeded');
      else if (OPEN.has(intent.status)) {
        throw new SimHttpError(
          400,
          'invalid_state',
          `payment intent ${intent.id} is ${intent.status}; only requires_capture can be captured`,
        );
      }
      return intent;
    },

    unclaim(intent: Intent) {
      if (intent.status === 'claimed') transition(intent, 'requires_payment');
      return intent;
    },

    remainingRefundable(intent: Intent): number {
      let refunded = 0;
      for (const refund of refunds.values()) if (refund.intentId === intent.id) refunded += refund.amount;
      return intent.amount - refunded;
    },

    refund(intent: Intent, amount: number, idempotencyKey: string): GeregeRefund {
      const refund: GeregeRefund = { id: `re_${ctx.ids.token(24)}`, intentId: intent.id, amount, status: 'succeeded' };
      refunds.set(refund.id, refund);
      ctx.records.refunds.push({ id: refund.id, invoiceId: intent.id, amount, idempotencyKey, status: refund.status, at: ctx.clock.now() });
      emit('refund.succeeded', refundJson(refund));
      return refund;
    },

    events: () => events,

    /** The customer pays: (claimed →) processing → succeeded | requires_capture, one event each. */
    pay(id: string, amount?: number) {
      sweep();
      const intent = find(id);
      if (!OPEN.has(intent.status))
        throw new SimHttpError(409, 'invalid_state', `payment intent ${id} is ${intent.status} and cannot be paid`);
      if (amount !== undefined) {
        if (!isPositiveInteger(amount)) throw new SimHttpError(400, 'invalid_request', 'amount must be a positive integer');
        intent.amount = amount;
        intent.record.amount = amount;
      }
      if (intent.status === 'requires_payment') transition(intent, 'claimed');
      if (intent.status === 'claimed') transition(intent, 'processing');
      transition(intent, intent.captureMethod === 'manual' ? 'requires_capture' : 'succeeded');
    },

    expire(id: string) {
      const intent = find(id);
      intent.expiresAt = Math.min(intent.expiresAt, nowSec());
      if (OPEN.has(intent.status)) transition(intent, 'expired');
    },

    view(id: string, scanned: boolean) {
      sweep();
      const intent = intents.get(id);
      if (!intent) return undefined;
      if (scanned && intent.status === 'requires_payment') transition(intent, 'claimed');
      return {
        id,
        status: intent.status,
        amount: intent.amount,
        currency: intent.currency,
        reference: intent.reference,
        payable: OPEN.has(intent.status),
      };
    },
  };
}

export type GeregeState = ReturnType<typeof createGeregeState>;
