/**
 * Kaspi QR payments, in memory, written from Kaspi's published merchant API (docs/providers.md,
 * "Kaspi QR"): a QR is made for a registered device (its DeviceToken) with the merchant's
 * ExternalId; the customer scans it (Wait) and confirms (Processed), or fails (Error); a QR nobody
 * pays runs out (Error); a paid QR is returned in whole or in parts up to what is left. HTTP and the
 * certificate and whitelist checks live in kaspi-routes.ts.
 */
import type { InvoiceRecord } from './types.js';
import type { SimContext } from './context.js';
import { SimHttpError } from './request-checks.js';

export type KaspiSimStatus = 'QrTokenCreated' | 'Wait' | 'Processed' | 'Error' | 'RemotePaymentCanceled';

export interface KaspiSimPayment {
  id: string;
  deviceToken: string;
  externalId: string;
  amount: number;
  /**
   * What Kaspi says was paid (details' TotalAmount) once Processed: the QR's amount, unless a test
   * made the payment of another amount (`pay(id, amount)`: a Kaspi answer no customer's app should
   * produce, played so the device's mismatch rule is exercised for Kaspi as for every provider).
   */
  paid: number;
  status: KaspiSimStatus;
  /** Clock ms after which an unpaid QR is Error. */
  expiresAt: number;
  returned: number;
  record: InvoiceRecord;
}

/** Kaspi's refusals come as HTTP 200 with a negative StatusCode (codes assumed where not public). */
export class KaspiRefusal extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

export const KASPI_SIM_CODES = {
  deviceNotFound: -1501,
  purchaseNotFound: -1601,
  invalid: -1,
  returnRefused: -99000,
  duplicateExternalId: -1502,
  notCancellable: -1602,
} as const;

export function createKaspiState(ctx: SimContext, options: { currency: string; qrLifetimeSec: number }) {
  const payments = new Map<string, KaspiSimPayment>();
  const byExternal = new Map<string, KaspiSimPayment>();
  let next = 100_000 + ctx.ids.int(800_000);

  function note(payment: KaspiSimPayment, word: KaspiSimStatus): void {
    payment.status = word;
    payment.record.status = word;
    ctx.records.events.push({ QrPaymentId: payment.id, Status: word });
  }

  function sweepOne(payment: KaspiSimPayment): void {
    if ((payment.status === 'QrTokenCreated' || payment.status === 'Wait') && ctx.clock.now() >= payment.expiresAt) note(payment, 'Error');
  }

  function find(id: string): KaspiSimPayment {
    const payment = payments.get(id);
    if (!payment) throw new KaspiRefusal(KASPI_SIM_CODES.purchaseNotFound, `no QR payment ${id}`);
    sweepOne(payment);
    return payment;
  }

  function own(id: string, deviceToken: string): KaspiSimPayment {
    const payment = find(id);
    if (payment.deviceToken !== deviceToken)
      throw new KaspiRefusal(KASPI_SIM_CODES.purchaseNotFound, `no QR payment ${id} for this device`);
    return payment;
  }

  /** For the admin/test routes: the id must exist (404 otherwise, as the other backends). */
  function admin(id: string): KaspiSimPayment {
    const payment = payments.get(id);
    if (!payment) throw new SimHttpError(404, 'not_found', `no QR payment ${id}`);
    sweepOne(payment);
    return payment;
  }

  return {
    find,
    own,
    admin,
    byExternal: (externalId: string) => byExternal.get(externalId),
    sweep(): void {
      for (const payment of payments.values()) sweepOne(payment);
    },

    create(deviceToken: string, externalId: string, amount: number, body: unknown): KaspiSimPayment {
      next += 1 + ctx.ids.int(7);
      const id = String(next);
      const record: InvoiceRecord = {
        id,
        idempotencyKey: externalId,
        reference: null,
        amount,
        currency: options.currency,
        status: 'QrTokenCreated',
        livemode: ctx.livemode,
        createdAt: ctx.clock.now(),
        body,
      };
      const payment: KaspiSimPayment = {
        id,
        deviceToken,
        externalId,
        amount,
        paid: 0,
        status: 'QrTokenCreated',
        expiresAt: ctx.clock.now() + options.qrLifetimeSec * 1000,
        returned: 0,
        record,
      };
      payments.set(id, payment);
      if (!byExternal.has(externalId)) byExternal.set(externalId, payment);
      ctx.records.invoices.push(record);
      ctx.records.events.push({ QrPaymentId: id, Status: 'QrTokenCreated' });
      return payment;
    },

    /** test/payment/scan: the customer's app opened the QR. */
    scan(payment: KaspiSimPayment): void {
      if (payment.status !== 'QrTokenCreated') throw new KaspiRefusal(KASPI_SIM_CODES.invalid, `QR ${payment.id} is ${payment.status}`);
      note(payment, 'Wait');
    },
    /** test/payment/confirm: the customer confirmed; the money is taken. */
    confirm(payment: KaspiSimPayment, paidAmount = payment.amount): void {
      if (payment.status !== 'Wait') throw new KaspiRefusal(KASPI_SIM_CODES.invalid, `QR ${payment.id} is ${payment.status}, not scanned`);
      payment.paid = paidAmount;
      note(payment, 'Processed');
      payment.record.paidAt = ctx.clock.now();
    },
    /** test/payment/scanerror and confirmerror: the customer's app or bank failed; the QR is closed. */
    error(payment: KaspiSimPayment, stage: 'scan' | 'confirm'): void {
      const from = stage === 'scan' ? 'QrTokenCreated' : 'Wait';
      if (payment.status !== from) throw new KaspiRefusal(KASPI_SIM_CODES.invalid, `QR ${payment.id} is ${payment.status}`);
      note(payment, 'Error');
    },
    cancel(payment: KaspiSimPayment): void {
      if (payment.status !== 'QrTokenCreated' && payment.status !== 'Wait')
        throw new KaspiRefusal(KASPI_SIM_CODES.notCancellable, `QR ${payment.id} is ${payment.status} and cannot be cancelled`);
      note(payment, 'RemotePaymentCanceled');
    },
    /** payment/return: up to what is left; the status stays Processed (details says what is left). */
    giveBack(payment: KaspiSimPayment, amount: number, idempotencyKey?: string): string {
      if (payment.status !== 'Processed') throw new KaspiRefusal(KASPI_SIM_CODES.returnRefused, `QR ${payment.id} is ${payment.status}`);
      if (amount > payment.paid - payment.returned)
        throw new KaspiRefusal(KASPI_SIM_CODES.returnRefused, `return ${amount} exceeds what is left (${payment.paid - payment.returned})`);
      payment.returned += amount;
      const operationId = String(500_000 + ctx.records.refunds.length + ctx.ids.int(1000) * 1000);
      ctx.records.refunds.push({
        id: operationId,
        invoiceId: payment.id,
        amount,
        status: 'succeeded',
        at: ctx.clock.now(),
        ...(idempotencyKey ? { idempotencyKey } : {}),
      });
      ctx.records.events.push({ QrPaymentId: payment.id, Status: 'Processed', Returned: payment.returned });
      return operationId;
    },
    expire(payment: KaspiSimPayment): void {
      if (payment.status === 'QrTokenCreated' || payment.status === 'Wait') note(payment, 'Error');
    },
  };
}

export type KaspiSimState = ReturnType<typeof createKaspiState>;
