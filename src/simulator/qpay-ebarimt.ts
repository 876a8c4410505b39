/**
 * QPay's eBarimt 3.0 route, written from QPay's published API (docs/receipts.md, "QPay eBarimt"):
 * `POST /v2/ebarimt_v3/create` files the receipt of one payment (receiver type citizen or
 * organisation, district code, classification code) and `DELETE /v2/ebarimt_v3/{id}` returns it.
 * Independent of the adapter in src/fiscal/qpay/. What QPay does with a second create for a payment
 * that has a receipt is not documented: `repeat` plays each reading (by default a second receipt,
 * the worst case, which a client must never cause). The usual faults (timeouts, lost answers, 5xx,
 * 429) are its own (`setEbarimtFaults`), apart from the payment routes'.
 */
import type { FastifyRequest } from 'fastify';
import type { ApiResult, ApiRoute, SimContext } from './context.js';
import { SimHttpError, checkObjectBody } from './request-checks.js';
import type { QpayEbarimtRecord, QpayEbarimtRepeat } from './types.js';

export type { QpayEbarimtRecord, QpayEbarimtRepeat } from './types.js';

export interface QpayEbarimtDeps {
  ctx: SimContext;
  requireToken(request: FastifyRequest): void;
  /** The payment's amount and word, or a SimHttpError when QPay has no such payment. */
  payment(paymentId: string): { amount: number; status: string };
  repeat: QpayEbarimtRepeat;
  /** Every receipt filed, in order (the tests count them per payment). */
  records: QpayEbarimtRecord[];
}

const RECEIVER_TYPES = ['CITIZEN', 'COMPANY'];

export function qpayEbarimtRoutes(deps: QpayEbarimtDeps): ApiRoute[] {
  const { ctx } = deps;
  const digits = (n: number) => Array.from({ length: n }, () => ctx.ids.int(10)).join('');

  function answer(record: QpayEbarimtRecord, amount: number): ApiResult {
    return {
      status: 200,
      body: {
        id: record.id,
        ebarimt_by: 'QPAY',
        g_payment_id: record.paymentId,
        ebarimt_receiver_type: record.receiverType,
        amount: amount.toFixed(2),
        vat_amount: (Math.round((amount / 11) * 100) / 100).toFixed(2),
        city_tax_amount: '0.00',
        ebarimt_qr_data: `${digits(40)}`,
        ebarimt_lottery: `SM ${digits(8)}`,
        ebarimt_receipt_id: record.receiptId,
        barimt_status: record.returnedAt === null ? 'REGISTERED' : 'CANCELED',
        created_date: new Date(record.at).toISOString(),
        status: true,
      },
    };
  }

  function create(request: FastifyRequest): ApiResult {
    deps.requireToken(request);
    const body = checkObjectBody(request.body, [
      'payment_id',
      'ebarimt_receiver_type',
      'ebarimt_receiver',
      'district_code',
      'classification_code',
    ]);
    const problems: string[] = [];
    if (typeof body.payment_id !== 'string' || body.payment_id === '') problems.push('payment_id: the payment to file');
    if (typeof body.ebarimt_receiver_type !== 'string' || !RECEIVER_TYPES.includes(body.ebarimt_receiver_type))
      problems.push('ebarimt_receiver_type: CITIZEN or COMPANY');
    if (
      body.ebarimt_receiver_type === 'COMPANY' &&
      (typeof body.ebarimt_receiver !== 'string' || !/^\d{7,14}$/.test(body.ebarimt_receiver))
    )
      problems.push("ebarimt_receiver: the organisation's TIN");
    if (typeof body.district_code !== 'string' || !/^\d{4}$/.test(body.district_code)) problems.push('district_code: 4 digits');
    if (typeof body.classification_code !== 'string' || !/^\d{7}$/.test(body.classification_code))
      problems.push('classification_code: 7 digits');
    if (problems.length > 0) throw new SimHttpError(400, 'INVALID_REQUEST', problems.join('; '));
    const paymentId = body.payment_id as string;
    const payment = deps.payment(paymentId);
    if (payment.status !== 'PAID' && payment.status !== 'REFUNDED')
      throw new SimHttpError(400, 'PAYMENT_NOT_PAID', `payment ${paymentId} is ${payment.status}`);
    const prior = deps.records.find((r) => r.paymentId === paymentId && r.returnedAt === null);
    if (prior && deps.repeat === 'refuse')
      throw new SimHttpError(400, 'EBARIMT_ALREADY_REGISTERED', `payment ${paymentId} has an eBarimt receipt already`);
    if (prior && deps.repeat === 'first') return answer(prior, payment.amount);
    const record: QpayEbarimtRecord = {
      id: `eb_${ctx.ids.token(16)}`,
      paymentId,
      receiptId: digits(33),
      receiverType: body.ebarimt_receiver_type as string,
      districtCode: body.district_code as string,
      classificationCode: body.classification_code as string,
      at: ctx.clock.now(),
      returnedAt: null,
    };
    deps.records.push(record);
    return answer(record, payment.amount);
  }

  function remove(request: FastifyRequest): ApiResult {
    deps.requireToken(request);
    const id = (request.params as { id: string }).id;
    const record = deps.records.find((r) => r.id === id);
    if (!record) throw new SimHttpError(404, 'EBARIMT_NOT_FOUND', `no eBarimt receipt ${id}`);
    if (record.returnedAt !== null) throw new SimHttpError(400, 'EBARIMT_ALREADY_CANCELED', `eBarimt receipt ${id} is returned already`);
    record.returnedAt = ctx.clock.now();
    return answer(record, deps.payment(record.paymentId).amount);
  }

  return [
    { method: 'POST', url: '/v2/ebarimt_v3/create', faults: ctx.ebarimtFaults, handler: create },
    { method: 'DELETE', url: '/v2/ebarimt_v3/:id', faults: ctx.ebarimtFaults, handler: remove },
  ];
}
