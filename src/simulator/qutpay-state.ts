import type { InvoiceRecord } from './types.js';
import type { SimContext } from './context.js';
import { SimHttpError, checkObjectBody, isPositiveInteger } from './request-checks.js';

export type InvoiceStatus = 'new' | 'pending' | 'paid' | 'failed' | 'expired' | 'cancelled' | 'partially_refunded' | 'refunded';

/** Not paid yet: can expire, be paid, fail, or be cancelled. */
const OPEN: ReadonlySet<InvoiceStatus> = new Set(['new', 'pending']);

export interface QutpayRefund {
  id: string;
  invoiceId: string;
  amount: number;
  status: 'succeeded';
}

export interface QutpayInvoice {
  id: string;
  status: InvoiceStatus;
  amount: number;
  description: string;
  externalOrderId: string | null;
  /** ms since epoch. */
  expiresAt: number;
  refunds: QutpayRefund[];
  record: InvoiceRecord;
}

export interface CreateFields {
  amount: number;
  description: string;
  externalOrderId: string | null;
}

export function parseCreateBody(body: unknown): CreateFields {
  const b = checkObjectBody(body, ['amount', 'description', 'externalOrderId']);
  const problems: string[] = [];
  if (!isPositiveInteger(b.amount)) problems.push('amount: a positive integer in the smallest currency unit is required');
  if (b.description !== undefined && (typeof b.description !== 'string' || b.description.length > 1000))
    problems.push('description: must be a string of at most 1000 characters');
  if (
    b.externalOrderId !== undefined &&
    (typeof b.externalOrderId !== 'string' || b.externalOrderId.length < 1 || b.externalOrderId.length > 128)
  )
    problems.push('externalOrderId: must be a string of 1-128 characters');
  if (problems.length > 0) throw new SimHttpError(400, 'invalid_request', problems.join('; '));
  return {
    amount: b.amount as number,
    description: (b.description as string | undefined) ?? '',
    externalOrderId: (b.externalOrderId as string | undefined) ?? null,
  };
}

/** QutPay invoices and refunds, in memory. HTTP lives in qutpay-routes.ts. */
export function createQutpayState(ctx: SimContext, options: { invoiceTtlSec: number; currency: string }) {
  const invoices = new Map<string, QutpayInvoice>();
  const open = new Set<QutpayInvoice>();

  function invoiceJson(invoice: QutpayInvoice) {
    const payUrl = `${ctx.baseUrl()}/__sim/pay/${invoice.id}`;
    return {
      id: invoice.id,
      status: invoice.status,
      amount: invoice.amount,
      description: invoice.description,
      externalOrderId: invoice.externalOrderId,
      payUrl,
      qr: payUrl,
      expiresAt: new Date(invoice.expiresAt).toISOString(),
      livemode: ctx.livemode,
    };
  }

  /** GET, cancel and webhooks carry the refunds too. */
  function invoiceWithRefunds(invoice: QutpayInvoice) {
    return { ...invoiceJson(invoice), refunds: invoice.refunds.map((r) => ({ id: r.id, amount: r.amount, status: r.status })) };
  }

  function transition(invoice: QutpayInvoice, status: InvoiceStatus) {
    invoice.status = status;
    invoice.record.status = status;
    if (OPEN.has(status)) open.add(invoice);
    else open.delete(invoice);
    if (status === 'paid') invoice.record.paidAt = ctx.clock.now();
    const body = { event: `invoice.${status}`, invoice: invoiceWithRefunds(invoice) };
    ctx.emit({ eventId: `${invoice.id}:${status}`, type: body.event, objectId: invoice.id, body: JSON.stringify(body) }, body);
  }

  function find(id: string): QutpayInvoice {
    const invoice = invoices.get(id);
    if (!invoice) throw new SimHttpError(404, 'not_found', `no invoice ${id}`);
    return invoice;
  }

  function sweep() {
    const now = ctx.clock.now();
    for (const invoice of [...open]) if (now >= invoice.expiresAt) transition(invoice, 'expired');
  }

  /** Still payable: open, or cancelled before its QR expired ("a QR may still be paid until expiresAt"). */
  function payable(invoice: QutpayInvoice): boolean {
    return OPEN.has(invoice.status) || (invoice.status === 'cancelled' && ctx.clock.now() < invoice.expiresAt);
  }

  return {
    invoiceJson,
    invoiceWithRefunds,
    sweep,
    get: (id: string) => find(id),

    create(idempotencyKey: string | null, body: unknown, fields: CreateFields): QutpayInvoice {
      const id = `inv_${ctx.ids.token(24)}`;
      const now = ctx.clock.now();
      const record: InvoiceRecord = {
        id,
        idempotencyKey,
        reference: fields.externalOrderId,
        amount: fields.amount,
        currency: options.currency,
        status: 'new',
        livemode: ctx.livemode,
        createdAt: now,
        body,
      };
      const invoice: QutpayInvoice = {
        id,
        status: 'new',
        amount: fields.amount,
        description: fields.description,
        externalOrderId: fields.externalOrderId,
        expiresAt: now + options.invoiceTtlSec * 1000,
        refunds: [],
        record,
      };
      invoices.set(id, invoice);
      ctx.records.invoices.push(record);
      // The QR is issued at once, so the API never shows `new` (docs/providers.md: create answers `pending`).
      transition(invoice, 'pending');
      return invoice;
    },

    /** Idempotent: anything not open is returned as it is. */
    cancel(invoice: QutpayInvoice) {
      if (OPEN.has(invoice.status)) transition(invoice, 'cancelled');
      return invoice;
    },

    remainingRefundable(invoice: QutpayInvoice): number {
      return invoice.amount - invoice.refunds.reduce((sum, r) => sum + r.amount, 0);
    },

    refund(
      invoice: QutpayInvoice,
      amount: number,
      idempotencyKey: string,
      answeredUnknown?: 'refund_unknown' | 'refund_pending_unknown',
    ): QutpayRefund {
      const refund: QutpayRefund = { id: `rf_${ctx.ids.token(24)}`, invoiceId: invoice.id, amount, status: 'succeeded' };
      invoice.refunds.push(refund);
      ctx.records.refunds.push({
        id: refund.id,
        invoiceId: invoice.id,
        amount,
        idempotencyKey,
        status: refund.status,
        at: ctx.clock.now(),
        ...(answeredUnknown ? { answeredUnknown } : {}),
      });
      transition(invoice, invoice.refunds.reduce((sum, r) => sum + r.amount, 0) >= invoice.amount ? 'refunded' : 'partially_refunded');
      return refund;
    },

    pay(id: string, amount?: number) {
      sweep();
      const invoice = find(id);
      if (!payable(invoice)) throw new SimHttpError(409, 'invalid_state', `invoice ${id} is ${invoice.status} and cannot be paid`);
      if (amount !== undefined) {
        if (!isPositiveInteger(amount)) throw new SimHttpError(400, 'invalid_request', 'amount must be a positive integer');
        invoice.amount = amount;
        invoice.record.amount = amount;
      }
      transition(invoice, 'paid');
    },

    expire(id: string) {
      const invoice = find(id);
      invoice.expiresAt = Math.min(invoice.expiresAt, ctx.clock.now());
      if (OPEN.has(invoice.status)) transition(invoice, 'expired');
    },

    fail(id: string) {
      sweep();
      const invoice = find(id);
      if (!OPEN.has(invoice.status)) throw new SimHttpError(409, 'invalid_state', `invoice ${id} is ${invoice.status} and cannot fail`);
      transition(invoice, 'failed');
    },

    view(id: string) {
      sweep();
      const invoice = invoices.get(id);
      if (!invoice) return undefined;
      return {
        id,
        status: invoice.status,
        amount: invoice.amount,
        currency: options.currency,
        reference: invoice.externalOrderId,
        payable: payable(invoice),
      };
    },
  };
}

export type QutpayState = ReturnType<typeof createQutpayState>;
