import type { CanonicalStatus } from '../payments/types.js';
import { isMoneyStatus, SERVICE_AT_WORK_STATES, type OrderState } from '../orders/index.js';

/** One invoice of this device as the database sees it: the order, its vend job and its refund. */
export interface LocalInvoice {
  invoice_id: string;
  order_id: number;
  reference: string;
  state: string;
  current: number;
  vend_state: string | null;
  vend_outcome: string | null;
  refund_state: string | null;
}

export type FindingKind = 'paid_not_vended' | 'vended_not_paid' | 'refunded_not_here' | 'unknown_here' | 'needs_a_person' | 'unreadable';

export interface Finding {
  kind: FindingKind;
  invoiceId: string;
  orderId: number | null;
  reference: string | null;
  providerStatus: string | null;
  localState: string | null;
  detail: string;
}

// Read-only over the contract tables (ARCHITECTURE.md "External contract": operators read them).
export const LOCAL_INVOICES_SQL = `
  SELECT oi.invoice_id, o.id AS order_id, o.reference, o.state, (o.invoice_id = oi.invoice_id) AS current,
         v.state AS vend_state, v.outcome AS vend_outcome, r.state AS refund_state
    FROM order_invoices oi
    JOIN orders o ON o.id = oi.order_id
    LEFT JOIN vend_jobs v ON v.order_id = o.id
    LEFT JOIN refunds r ON r.invoice_id = oi.invoice_id`;

/** A local state in which the service is still working on a payment it has seen (not a finding while it runs). */
export function serviceAtWork(state: string): boolean {
  return SERVICE_AT_WORK_STATES.includes(state as OrderState);
}

function vendedHere(row: LocalInvoice): boolean {
  if (!row.current) return false;
  return (
    (row.vend_state === 'done' && row.vend_outcome !== null) || (row.vend_state === 'resolved' && row.vend_outcome === 'resolved_vended')
  );
}

/**
 * Our records of one invoice against the provider's current status: what a person must look at,
 * or null when they agree. Paid ↔ vended / refunded / uncertain; refunded there ↔ our refunds.
 */
export function compareWithProvider(row: LocalInvoice, status: CanonicalStatus, providerStatus: string): Finding | null {
  const base = { invoiceId: row.invoice_id, orderId: row.order_id, reference: row.reference, localState: row.state, providerStatus };
  const vended = vendedHere(row);
  const refundedHere = row.refund_state !== null && row.refund_state !== 'failed';
  if (row.state === 'vend_uncertain') {
    return {
      ...base,
      kind: 'needs_a_person',
      detail: `the vend may or may not have happened: vendgate resolve ${row.order_id} --vended|--not-vended`,
    };
  }
  if (serviceAtWork(row.state)) return null;
  if (isMoneyStatus(status) && !vended && !refundedHere && row.state !== 'refunded') {
    return { ...base, kind: 'paid_not_vended', detail: 'paid at the provider; no vend and no refund here' };
  }
  if (vended && !isMoneyStatus(status) && status !== 'refunded') {
    return { ...base, kind: 'vended_not_paid', detail: `vended here; the provider says ${providerStatus}` };
  }
  // A refund the order itself records as its end (refunded-after-vend-goes-to-a-person) has its own alarm.
  if (vended && status === 'refunded' && !refundedHere && row.state !== 'refunded') {
    return {
      ...base,
      kind: 'refunded_not_here',
      detail: 'vended here, and refunded at the provider by someone else: goods and money both went',
    };
  }
  return null;
}
