/**
 * A person settles a parked case with one command (`vendgate settle`, or the signed MQTT command
 * `settle`): the alarm names the case, the person names its outcome.
 *
 * - `orphan_invoice/<invoice>` (money no order knows, parked by the sweep): `refund` gives the rest
 *   back (a hold is voided), with the provider's own read of the invoice and the sweep's refund key;
 *   `goods-went-out` keeps it; `not-ours` leaves it (another system's invoice under our reference).
 *   An orphan the sweep closed itself (nothing owed, older than retention) takes `checked`.
 * - `invoice_recovered/<order>`, `payment_mismatch/<order>`, `refunded_after_vend/<order>`: the
 *   service already followed the order; `checked` records that a person looked (order history).
 * - `forged_event/<id>`: nothing was moved on it; `checked` records that a person looked.
 *
 * Each closes its alarm, writes the audit event (and the order's history where there is an order)
 * and a row of `settled_cases`, in one transaction. Idempotent: a second settlement of a case is
 * answered from that row; only an interrupted refund is looked at again, and never sent blindly.
 */
import { durably, inTransaction, prepared, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import type { Outbox } from '../outbox/index.js';
import type { PaymentProvider, RefundResult } from '../payments/index.js';
import type { OrderRepository } from '../orders/index.js';

export const CASE_OUTCOMES = ['refund', 'goods-went-out', 'not-ours', 'checked'] as const;
export type CaseOutcome = (typeof CASE_OUTCOMES)[number];

export interface SettleAnswer {
  case: string;
  outcome: CaseOutcome;
  /** `done`: settled. `unknown`: a refund whose outcome the provider cannot say yet: check it there. */
  state: 'done' | 'unknown';
  detail: string;
  /** True when the case had been settled before: nothing was done again. */
  again: boolean;
}

export interface CaseSettlement {
  /**
   * Settles one case. Throws BAD_REQUEST (not a case name, or an outcome that case does not take),
   * NOT_FOUND (no such open case), ORDER_STATE (settled before with another outcome),
   * PROVIDER_REJECTED (the refund was refused: the case stays open), or a ProviderError.
   */
  settle(name: string, outcome: string, by: string): Promise<SettleAnswer>;
}

const ORDER_CASES = ['invoice_recovered', 'payment_mismatch', 'refunded_after_vend'];

interface CaseRow {
  outcome: CaseOutcome;
  state: 'settling' | 'done' | 'unknown';
  detail: string | null;
}
interface OrphanRow {
  reference: string;
  state: string;
  amount: number;
}

export function createCaseSettlement(deps: {
  db: Db;
  clock: Clock;
  logger: Logger;
  outbox: Outbox;
  provider: PaymentProvider;
  orders: Pick<OrderRepository, 'get' | 'note'>;
}): CaseSettlement {
  const { db, clock, outbox, provider } = deps;
  const log = deps.logger.child({ module: 'settle' });

  const caseRow = (name: string) =>
    prepared(db, 'SELECT outcome, state, detail FROM settled_cases WHERE name = ?').get(name) as CaseRow | undefined;
  const orphanRow = (invoiceId: string) =>
    prepared(db, 'SELECT reference, state, amount FROM orphan_invoices WHERE invoice_id = ?').get(invoiceId) as OrphanRow | undefined;

  function write(name: string, outcome: CaseOutcome, state: CaseRow['state'], by: string, detail: string): void {
    const now = clock.now();
    prepared(
      db,
      `INSERT INTO settled_cases (name, outcome, state, by_whom, detail, settled_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET state = excluded.state, detail = excluded.detail, updated_at = excluded.updated_at`,
    ).run(name, outcome, state, by, detail, now, now);
  }

  /** Closes the case: its row, its alarm, the audit event, the order's history (caller owns the tx). */
  function close(name: string, outcome: CaseOutcome, by: string, detail: string, orderId: number | null): SettleAnswer {
    write(name, outcome, 'done', by, detail);
    outbox.clearAlarm(name);
    outbox.event('case.settled', { case: name, outcome, by, detail, ...(orderId !== null ? { orderId } : {}) });
    if (orderId !== null) deps.orders.note(orderId, `${name} settled by ${by}: ${outcome} (${detail})`);
    log.warn({ case: name, outcome, by, detail }, 'case settled by a person');
    return { case: name, outcome, state: 'done', detail, again: false };
  }

  function refuse(code: string, message: string): never {
    throw new VendgateError(code as never, message);
  }

  async function refundOrphan(name: string, invoiceId: string, orphan: OrphanRow, by: string): Promise<SettleAnswer> {
    // The provider's own read decides what goes back, never a stored or claimed amount.
    const invoice = await provider.getInvoice(invoiceId);
    if (invoice.reference !== orphan.reference)
      refuse(ErrorCodes.BAD_REQUEST, `the provider holds ${invoiceId} under ${invoice.reference}, not ${orphan.reference}: not refunded`);
    const key = `${orphan.reference}-orphan-refund`;
    const rest = invoice.amount - (invoice.refundedAmount ?? 0);
    if (invoice.status === 'authorized') {
      const after = await provider.cancelInvoice(invoiceId);
      const released = after.status === 'canceled' || after.status === 'expired';
      if (!released) refuse(ErrorCodes.PROVIDER_REJECTED, `the hold could not be released (${after.providerStatus}): the case stays open`);
      return inTransaction(db, () => {
        setOrphan(invoiceId, 'settled_refund', `voided by ${by}`);
        return close(name, 'refund', by, `the held ${invoice.amount} ${invoice.currency} was released`, null);
      });
    }
    if (invoice.status === 'refunded' || rest <= 0 || (invoice.status !== 'paid' && invoice.status !== 'partially_refunded')) {
      return inTransaction(db, () => {
        setOrphan(invoiceId, 'settled_refund', `nothing to send: ${invoice.providerStatus}`);
        return close(name, 'refund', by, `nothing left to refund (${invoice.providerStatus}, ${rest} left)`, null);
      });
    }
    // The claim is on disk before the POST (a cut after it is looked at again, never re-sent blindly).
    durably(
      db,
      () => {
        write(name, 'refund', 'settling', by, `refund of ${rest} claimed under ${key}`);
        setOrphan(invoiceId, 'settling', `refund of ${rest} by ${by}`);
      },
      'refund_claim',
    );
    const request = { invoiceId, amount: rest, idempotencyKey: key };
    let result = await provider.refund(request);
    if (result.status === 'unknown' && provider.confirmRefund) result = await provider.confirmRefund(request);
    return finishRefund(name, invoiceId, rest, result, by);
  }

  function finishRefund(name: string, invoiceId: string, amount: number, result: RefundResult, by: string): SettleAnswer {
    if (result.status === 'failed') {
      // Refused for sure: nothing moved, the case stays open for another decision (written, then said).
      inTransaction(db, () => {
        prepared(db, 'DELETE FROM settled_cases WHERE name = ?').run(name);
        setOrphan(invoiceId, 'person', `refund refused: ${result.detail ?? ''}`);
      });
      refuse(ErrorCodes.PROVIDER_REJECTED, `the provider refused the refund (${result.detail ?? 'no detail'}): the case stays open`);
    }
    return inTransaction(db, () => {
      if (result.status === 'succeeded' || result.status === 'pending') {
        setOrphan(invoiceId, 'settled_refund', `refund ${result.refundId ?? ''} ${result.status}`);
        return close(name, 'refund', by, `${amount} refunded (${result.status}${result.refundId ? `, ${result.refundId}` : ''})`, null);
      }
      write(name, 'refund', 'unknown', by, `refund of ${amount}: its outcome is unknown: ${result.detail ?? ''}`);
      return {
        case: name,
        outcome: 'refund' as const,
        state: 'unknown' as const,
        detail: 'outcome unknown: check it at the provider',
        again: false,
      };
    });
  }

  function setOrphan(invoiceId: string, state: string, detail: string): void {
    prepared(db, 'UPDATE orphan_invoices SET state = ?, detail = ?, updated_at = ? WHERE invoice_id = ?').run(
      state,
      detail,
      clock.now(),
      invoiceId,
    );
  }

  /** A refund claim a cut (or an unknown answer) left: read, and only a provider that returns the same refund for the same key is asked again. */
  async function resumeRefund(name: string, invoiceId: string, orphan: OrphanRow, by: string): Promise<SettleAnswer> {
    const invoice = await provider.getInvoice(invoiceId);
    const claimedAmount = Number(/refund of (\d+)/.exec(caseRow(name)?.detail ?? '')?.[1] ?? invoice.amount);
    if (invoice.status === 'refunded' || invoice.status === 'partially_refunded')
      return finishRefund(name, invoiceId, claimedAmount, { status: 'succeeded' }, by);
    if (provider.confirmRefund) {
      const request = { invoiceId, amount: claimedAmount, idempotencyKey: `${orphan.reference}-orphan-refund` };
      return finishRefund(name, invoiceId, claimedAmount, await provider.confirmRefund(request), by);
    }
    return { case: name, outcome: 'refund', state: 'unknown', detail: 'outcome unknown: check the refund at the provider', again: true };
  }

  return {
    async settle(name, outcomeWord, by) {
      const [kind = '', id = ''] = [name.slice(0, name.indexOf('/')), name.slice(name.indexOf('/') + 1)];
      if (!name.includes('/') || id === '')
        refuse(ErrorCodes.BAD_REQUEST, `"${name}" is not a case: give an alarm's name, e.g. orphan_invoice/pi_…`);
      if (!(CASE_OUTCOMES as readonly string[]).includes(outcomeWord))
        refuse(ErrorCodes.BAD_REQUEST, `unknown outcome "${outcomeWord}"; one of: ${CASE_OUTCOMES.join(', ')}`);
      const outcome = outcomeWord as CaseOutcome;
      const before = caseRow(name);
      if (before && before.outcome !== outcome)
        refuse(ErrorCodes.ORDER_STATE, `${name} was already settled as ${before.outcome}; it cannot be settled again as ${outcome}`);
      if (kind === 'orphan_invoice') {
        const orphan = orphanRow(id);
        if (!orphan) refuse(ErrorCodes.NOT_FOUND, `no orphan invoice ${id} (vendgate settle takes the name of an open alarm)`);
        if (before?.state === 'done') return { case: name, outcome, state: 'done', detail: before.detail ?? '', again: true };
        if (before) return resumeRefund(name, id, orphan, by);
        const parked = orphan.state === 'person';
        if (parked && outcome === 'checked')
          refuse(ErrorCodes.BAD_REQUEST, `${name} is money no order knows: settle it as refund, goods-went-out or not-ours`);
        if (!parked && outcome !== 'checked')
          refuse(ErrorCodes.BAD_REQUEST, `${name} was settled by the sweep itself (${orphan.state}): close its alarm with checked`);
        if (outcome === 'refund') return refundOrphan(name, id, orphan, by);
        return inTransaction(db, () => {
          if (outcome !== 'checked') setOrphan(id, `settled_${outcome.replace(/-/g, '_')}`, `settled by ${by}`);
          const detail =
            outcome === 'goods-went-out'
              ? `the goods went out for ${orphan.reference}: the money is kept`
              : outcome === 'not-ours'
                ? `${orphan.reference} is not a sale of this device: left alone`
                : `looked at (${orphan.state})`;
          return close(name, outcome, by, detail, null);
        });
      }
      if (kind !== 'forged_event' && !ORDER_CASES.includes(kind))
        refuse(
          ErrorCodes.BAD_REQUEST,
          `vendgate settle takes orphan_invoice/…, forged_event/… or ${ORDER_CASES.map((k) => `${k}/…`).join(', ')}`,
        );
      if (outcome !== 'checked') refuse(ErrorCodes.BAD_REQUEST, `${name}: the service already acted on it; settle it as checked`);
      if (before) return { case: name, outcome, state: 'done', detail: before.detail ?? '', again: true };
      if (!outbox.isAlarmOpen(name)) refuse(ErrorCodes.NOT_FOUND, `no open alarm ${name}`);
      const orderId = kind === 'forged_event' ? null : Number(id);
      if (orderId !== null && !(Number.isInteger(orderId) && deps.orders.get(orderId)))
        refuse(ErrorCodes.NOT_FOUND, `no order ${id} for ${name}`);
      return inTransaction(db, () => close(name, outcome, by, 'a person looked at it', orderId));
    },
  };
}
