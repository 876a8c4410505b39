/**
 * QPay refunds: `DELETE /v2/payment/refund/{payment_id}` returns a whole payment. The payment rows
 * are read first, so a refund already made (by us after a lost answer, or on QPay's dashboard) is
 * reported instead of sent again; a refund whose answer is lost is `unknown` and never re-sent here
 * (the core reads the invoice before it would ask again).
 */
import type { Logger } from '../../util/logger.js';
import type { HttpRequest, HttpResponse } from '../http.js';
import { ProviderError, type RefundRequest, type RefundResult } from '../types.js';
import type { QpayPaymentCheck } from './wire.js';

const UNKNOWN_KINDS: readonly string[] = ['network', 'timeout', 'server', 'malformed', 'processing'];

export type RefundPlan = { kind: 'done'; result: RefundResult } | { kind: 'send'; paymentId: string };

/** From the payment rows: already refunded, impossible, or which payment to return. */
export function decideQpayRefund(request: RefundRequest, check: QpayPaymentCheck): RefundPlan {
  const paid = check.rows.filter((row) => row.payment_status === 'PAID');
  const refunded = check.rows.filter((row) => row.payment_status === 'REFUNDED');
  const exact = paid.find((row) => row.payment_amount === request.amount);
  if (exact) return { kind: 'send', paymentId: exact.payment_id };
  const already = refunded.find((row) => row.payment_amount === request.amount);
  if (already) {
    return {
      kind: 'done',
      result: { status: 'succeeded', refundId: already.payment_id, detail: 'QPay shows this payment refunded already' },
    };
  }
  const detail =
    paid.length === 0
      ? `no paid payment on invoice ${request.invoiceId} to refund`
      : `QPay refunds whole payments only: asked for ${request.amount}, the payment is ${paid.map((row) => row.payment_amount).join(', ')}`;
  return { kind: 'done', result: { status: 'failed', detail } };
}

export async function sendQpayRefund(
  log: Logger,
  request: RefundRequest,
  paymentId: string,
  io: { authed(request: HttpRequest): Promise<HttpResponse>; paymentCheck(invoiceId: string): Promise<QpayPaymentCheck> },
): Promise<RefundResult> {
  try {
    await io.authed({
      method: 'DELETE',
      path: `/v2/payment/refund/${encodeURIComponent(paymentId)}`,
      json: { note: `vendgate refund ${request.idempotencyKey}`.slice(0, 255) },
      retry: 'none',
    });
  } catch (err) {
    if (err instanceof ProviderError && UNKNOWN_KINDS.includes(err.kind)) {
      log.warn({ invoiceId: request.invoiceId, paymentId, detail: err.message }, 'refund outcome unknown, not retried');
      return { status: 'unknown', refundId: paymentId, detail: err.message };
    }
    throw err;
  }
  // Accepted: the payment row says when the money is back.
  try {
    const after = await io.paymentCheck(request.invoiceId);
    const row = after.rows.find((r) => r.payment_id === paymentId);
    if (row?.payment_status === 'REFUNDED') return { status: 'succeeded', refundId: paymentId };
  } catch (err) {
    log.debug({ err, invoiceId: request.invoiceId }, 'refund accepted; the read after it failed');
  }
  return { status: 'pending', refundId: paymentId, detail: 'QPay accepted the refund; the payment is not shown refunded yet' };
}
