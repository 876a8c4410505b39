import type {
  CanonicalStatus,
  CreateInvoiceRequest,
  Invoice,
  PaymentProvider,
  RefundRequest,
  RefundResult,
} from '../../src/payments/types.js';
import { ProviderError, WebhookVerificationError } from '../../src/payments/types.js';

/** What the device asks a provider for a 1,500 MNT Water made at `reference` (its key: `<reference>-pay`). */
export function waterInvoiceRequest(
  reference: string,
  captureMode: CreateInvoiceRequest['captureMode'] = 'automatic',
): CreateInvoiceRequest {
  return {
    amount: 1500,
    currency: 'MNT',
    reference,
    description: 'Water',
    idempotencyKey: `${reference}-pay`,
    expiresInSec: 120,
    captureMode,
  };
}

/**
 * An in-memory provider whose every answer a test can script. Records every call so tests can
 * assert "exactly one create per key", "one refund per failed vend".
 */
export function createFakeProvider(options: { livemode?: boolean; now?: () => number } = {}) {
  const invoices = new Map<string, Invoice & { key: string }>();
  const byKey = new Map<string, string>();
  const calls: { method: string; arg: unknown }[] = [];
  let seq = 0;
  const now = options.now ?? (() => Date.now());
  const hooks: {
    beforeCreate?: (request: CreateInvoiceRequest) => void | Promise<void>;
    transformCreate?: (invoice: Invoice) => Invoice;
    getError?: (id: string) => Error | undefined;
    /** Thrown by captureInvoice instead of capturing (a provider that is down, or refuses). */
    captureError?: (id: string) => Error | undefined;
    refund?: (request: RefundRequest) => RefundResult | Promise<RefundResult>;
    /** Set to offer confirmRefund (a provider whose refund keys are idempotent, like Gerege). */
    confirmRefund?: (request: RefundRequest) => RefundResult | Promise<RefundResult>;
  } = {};

  const provider: PaymentProvider = {
    name: 'sandbox',
    async createInvoice(request) {
      calls.push({ method: 'createInvoice', arg: request });
      await hooks.beforeCreate?.(request);
      const existing = byKey.get(request.idempotencyKey);
      if (existing) return { ...invoices.get(existing)!, replayed: true };
      const id = `fk_${++seq}`;
      const invoice = {
        id,
        key: request.idempotencyKey,
        status: 'pending' as CanonicalStatus,
        providerStatus: 'pending',
        amount: request.amount,
        currency: request.currency,
        reference: request.reference,
        livemode: options.livemode ?? false,
        payUrl: `https://pay.example/${id}`,
        expiresAt: now() + request.expiresInSec * 1000,
      };
      invoices.set(id, invoice);
      byKey.set(request.idempotencyKey, id);
      return hooks.transformCreate ? hooks.transformCreate(invoice) : invoice;
    },
    async getInvoice(id) {
      calls.push({ method: 'getInvoice', arg: id });
      const err = hooks.getError?.(id);
      if (err) throw err;
      const invoice = invoices.get(id);
      if (!invoice) throw new ProviderError('not_found', `no ${id}`, { httpStatus: 404 });
      return { ...invoice };
    },
    async cancelInvoice(id) {
      calls.push({ method: 'cancelInvoice', arg: id });
      const invoice = invoices.get(id)!;
      if (invoice.status === 'pending' || invoice.status === 'authorized') set(id, 'canceled');
      return { ...invoices.get(id)! };
    },
    async captureInvoice(id) {
      calls.push({ method: 'captureInvoice', arg: id });
      const err = hooks.captureError?.(id);
      if (err) throw err;
      if (invoices.get(id)!.status === 'authorized') set(id, 'paid');
      return { ...invoices.get(id)! };
    },
    async refund(request) {
      calls.push({ method: 'refund', arg: request });
      if (hooks.refund) return hooks.refund(request);
      set(request.invoiceId, 'refunded');
      return { status: 'succeeded', refundId: `re_${request.invoiceId}` };
    },
    get confirmRefund() {
      const confirm = hooks.confirmRefund;
      if (!confirm) return undefined;
      return async (request: RefundRequest) => {
        calls.push({ method: 'confirmRefund', arg: request });
        return confirm(request);
      };
    },
    verifyWebhook() {
      throw new WebhookVerificationError('bad_signature', 'fake provider takes no webhooks');
    },
    async checkCredentials() {
      return { detail: 'fake' };
    },
  };

  function set(id: string, status: CanonicalStatus, patch: Partial<Invoice> = {}) {
    const invoice = invoices.get(id);
    if (!invoice) throw new Error(`fake provider has no invoice ${id}`);
    invoices.set(id, { ...invoice, ...patch, status, providerStatus: status });
  }

  return {
    provider,
    hooks,
    calls,
    invoices,
    set,
    callsOf(method: string) {
      return calls.filter((c) => c.method === method);
    },
  };
}

export type FakeProvider = ReturnType<typeof createFakeProvider>;
