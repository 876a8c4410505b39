/**
 * QPay v2 invoices and payments, in memory, written from QPay's published API (docs/providers.md,
 * "QPay"): an invoice holds payment rows (NEW, FAILED, PAID, REFUNDED); an unpaid invoice can be
 * deleted; a payment is refunded whole. HTTP lives in qpay-routes.ts.
 */
import type { InvoiceRecord } from './types.js';
import type { SimContext } from './context.js';
import { SimHttpError, checkObjectBody, isPositiveInteger } from './request-checks.js';

export type QpayInvoiceStatus = 'OPEN' | 'PAID' | 'CANCELED' | 'EXPIRED';
export type QpayPaymentStatus = 'NEW' | 'FAILED' | 'PAID' | 'REFUNDED';

export interface QpayPayment {
  payment_id: string;
  payment_status: QpayPaymentStatus;
  payment_amount: number;
}

export interface QpaySimInvoice {
  id: string;
  status: QpayInvoiceStatus;
  senderInvoiceNo: string;
  description: string;
  amount: number;
  callbackUrl: string;
  payments: QpayPayment[];
  record: InvoiceRecord;
}

export interface QpayCreateFields {
  invoice_code: string;
  sender_invoice_no: string;
  invoice_receiver_code: string;
  invoice_description: string;
  amount: number;
  callback_url: string;
}

export function parseQpayCreateBody(body: unknown, invoiceCode: string): QpayCreateFields {
  const b = checkObjectBody(body, [
    'invoice_code',
    'sender_invoice_no',
    'invoice_receiver_code',
    'invoice_description',
    'sender_branch_code',
    'amount',
    'callback_url',
  ]);
  const problems: string[] = [];
  if (b.invoice_code !== invoiceCode) problems.push('invoice_code: not the code QPay assigned to this merchant');
  if (typeof b.sender_invoice_no !== 'string' || b.sender_invoice_no.length < 1 || b.sender_invoice_no.length > 45)
    problems.push('sender_invoice_no: 1-45 characters');
  if (typeof b.invoice_receiver_code !== 'string' || b.invoice_receiver_code === '') problems.push('invoice_receiver_code: required');
  if (typeof b.invoice_description !== 'string' || b.invoice_description === '') problems.push('invoice_description: required');
  if (!isPositiveInteger(b.amount)) problems.push('amount: a positive amount in tögrög');
  if (typeof b.callback_url !== 'string' || !URL.canParse(b.callback_url)) problems.push('callback_url: a URL');
  if (problems.length > 0) throw new SimHttpError(400, 'INVALID_REQUEST', problems.join('; '));
  return b as unknown as QpayCreateFields;
}

/** QPay invoice ids look like UUIDs. */
function uuidLike(ctx: SimContext): string {
  const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[ctx.ids.int(16)]).join('');
  return `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
}

/** QPay payment ids are long decimal numbers. */
function digits(ctx: SimContext, n: number): string {
  return `${1 + ctx.ids.int(9)}${Array.from({ length: n - 1 }, () => ctx.ids.int(10)).join('')}`;
}

export function createQpayState(ctx: SimContext, options: { currency: string }) {
  const invoices = new Map<string, QpaySimInvoice>();
  const bySenderNo = new Map<string, QpaySimInvoice>();
  const payments = new Map<string, { invoice: QpaySimInvoice; payment: QpayPayment }>();

  function find(id: string): QpaySimInvoice {
    const invoice = invoices.get(id);
    if (!invoice) throw new SimHttpError(404, 'INVOICE_NOTFOUND', `no invoice ${id}`);
    return invoice;
  }

  /** Every status change is in `events`; only a payment is called back (QPay calls callback_url after a payment). */
  function note(invoice: QpaySimInvoice, word: string, callback: boolean): void {
    invoice.record.status = word;
    const body = { object_id: invoice.id, status: word };
    if (!callback) {
      ctx.records.events.push(body);
      return;
    }
    ctx.emit({ eventId: `${invoice.id}:${word}`, type: `payment.${word}`, objectId: invoice.id, body: '', url: invoice.callbackUrl }, body);
  }

  function paid(invoice: QpaySimInvoice): QpayPayment | undefined {
    return invoice.payments.find((p) => p.payment_status === 'PAID');
  }

  return {
    get: find,
    bySenderNo: (no: string) => bySenderNo.get(no),
    payment(paymentId: string) {
      const found = payments.get(paymentId);
      if (!found) throw new SimHttpError(404, 'PAYMENT_NOTFOUND', `no payment ${paymentId}`);
      return found;
    },

    create(fields: QpayCreateFields, body: unknown): QpaySimInvoice {
      const id = uuidLike(ctx);
      const record: InvoiceRecord = {
        id,
        idempotencyKey: fields.sender_invoice_no,
        reference: new URL(fields.callback_url).searchParams.get('ref'),
        amount: fields.amount,
        currency: options.currency,
        status: 'OPEN',
        livemode: ctx.livemode,
        createdAt: ctx.clock.now(),
        body,
      };
      const invoice: QpaySimInvoice = {
        id,
        status: 'OPEN',
        senderInvoiceNo: fields.sender_invoice_no,
        description: fields.invoice_description,
        amount: fields.amount,
        callbackUrl: fields.callback_url,
        payments: [],
        record,
      };
      invoices.set(id, invoice);
      if (!bySenderNo.has(fields.sender_invoice_no)) bySenderNo.set(fields.sender_invoice_no, invoice);
      ctx.records.invoices.push(record);
      note(invoice, 'OPEN', false);
      return invoice;
    },

    invoiceJson(invoice: QpaySimInvoice) {
      return {
        invoice_id: invoice.id,
        invoice_status: invoice.status,
        sender_invoice_no: invoice.senderInvoiceNo,
        invoice_description: invoice.description,
        amount: invoice.amount,
        total_amount: invoice.amount,
        callback_url: invoice.callbackUrl,
      };
    },

    check(invoiceId: string) {
      const invoice = invoices.get(invoiceId);
      const rows = (invoice?.payments ?? []).map((p) => ({ ...p, payment_currency: options.currency, payment_wallet: 'SIMBANK' }));
      const paidAmount = rows.filter((r) => r.payment_status === 'PAID').reduce((sum, r) => sum + r.payment_amount, 0);
      return { count: rows.length, paid_amount: paidAmount, rows };
    },

    /** DELETE of an unpaid, open invoice; anything else is refused and changes nothing. */
    cancel(invoice: QpaySimInvoice): void {
      if (invoice.status !== 'OPEN') throw new SimHttpError(400, 'INVOICE_NOT_OPEN', `invoice ${invoice.id} is ${invoice.status}`);
      invoice.status = 'CANCELED';
      note(invoice, 'CANCELED', false);
    },

    /** Returns a whole payment. */
    refund(invoice: QpaySimInvoice, payment: QpayPayment): void {
      if (payment.payment_status !== 'PAID')
        throw new SimHttpError(400, 'PAYMENT_NOT_PAID', `payment ${payment.payment_id} is ${payment.payment_status}`);
      payment.payment_status = 'REFUNDED';
      ctx.records.refunds.push({
        id: payment.payment_id,
        invoiceId: invoice.id,
        amount: payment.payment_amount,
        status: 'REFUNDED',
        at: ctx.clock.now(),
      });
      note(invoice, 'REFUNDED', false);
    },

    paid,

    pay(id: string, amount?: number) {
      const invoice = find(id);
      if (invoice.status !== 'OPEN')
        throw new SimHttpError(409, 'INVOICE_NOT_OPEN', `invoice ${id} is ${invoice.status} and cannot be paid`);
      if (amount !== undefined && !isPositiveInteger(amount))
        throw new SimHttpError(400, 'INVALID_REQUEST', 'amount must be a positive integer');
      const payment: QpayPayment = { payment_id: digits(ctx, 12), payment_status: 'PAID', payment_amount: amount ?? invoice.amount };
      invoice.payments.push(payment);
      payments.set(payment.payment_id, { invoice, payment });
      invoice.status = 'PAID';
      invoice.record.paidAt = ctx.clock.now();
      if (amount !== undefined) invoice.record.amount = amount;
      note(invoice, 'PAID', true);
    },

    /** The bank declined one try: a FAILED row; the invoice stays open for another try. */
    fail(id: string) {
      const invoice = find(id);
      if (invoice.status !== 'OPEN') throw new SimHttpError(409, 'INVOICE_NOT_OPEN', `invoice ${id} is ${invoice.status}`);
      const payment: QpayPayment = { payment_id: digits(ctx, 12), payment_status: 'FAILED', payment_amount: invoice.amount };
      invoice.payments.push(payment);
      payments.set(payment.payment_id, { invoice, payment });
      note(invoice, 'FAILED', false);
    },

    expire(id: string) {
      const invoice = find(id);
      if (invoice.status !== 'OPEN') return;
      invoice.status = 'EXPIRED';
      note(invoice, 'EXPIRED', false);
    },

    view(id: string) {
      const invoice = invoices.get(id);
      if (!invoice) return undefined;
      return {
        id,
        status: invoice.status,
        amount: invoice.amount,
        currency: options.currency,
        reference: invoice.record.reference,
        payable: invoice.status === 'OPEN',
      };
    },
  };
}

export type QpaySimState = ReturnType<typeof createQpayState>;
