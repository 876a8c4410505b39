import { describe } from 'vitest';
import { isRecord } from '../../../src/payments/http.js';
import { CANONICAL_STATUSES, type CanonicalStatus } from '../../../src/payments/types.js';
import { providerContract } from './provider-contract.js';
import { startSandboxHarness } from './sandbox-harness.js';

/** The invoice inside a sandbox event: `data.object`, the canonical Invoice the sandbox holds. */
function invoiceOf(body: unknown): Record<string, unknown> | undefined {
  return isRecord(body) && isRecord(body.data) && isRecord(body.data.object) ? body.data.object : undefined;
}

const IN_PROCESS = 'the sandbox runs inside the gateway and keeps its invoices in its own SQLite file';

describe('sandbox provider (the demo) against the same contract', () => {
  providerContract({
    name: 'sandbox',
    start: startSandboxHarness,
    unknownInvoiceId: 'sb_missing',
    statusAfterFullRefund: 'refunded',
    // The sandbox's own words are the canonical statuses.
    mapStatus: (word) => ((CANONICAL_STATUSES as readonly string[]).includes(word) ? (word as CanonicalStatus) : undefined),
    statusWordOf: (body) => {
      const status = invoiceOf(body)?.providerStatus;
      return typeof status === 'string' ? status : undefined;
    },
    expectedEventId: (body) => (body as { id: string }).id,
    network: { byDesign: IN_PROCESS },
    credentials: { byDesign: 'nothing to authenticate to: no real money, livemode is always false' },
    anotherAmountPaid: { byDesign: 'its pay page has one button, which pays the invoice amount' },
    partialRefunds: {
      byDesign: 'it refunds whole invoices; nothing else refunds on it, so the core never owes only a part',
    },
    duplicateDeliveries: { byDesign: `${IN_PROCESS}; each status change is handed to the webhook listener once` },
  });
});
