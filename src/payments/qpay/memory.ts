/**
 * What the QPay adapter keeps in memory, bounded: the create of each attempt (so a double press or a
 * retry in this process gets the one invoice), the keys whose create answer was lost (never sent
 * again), and which invoice belongs to which order (so a callback's `?ref=` names an invoice).
 * A restart forgets all of it; the core then follows every open invoice by polling.
 */
import type { Invoice } from '../types.js';
import type { QpayPaymentCheck } from './wire.js';

const MAX_ENTRIES = 1_000;

export interface KnownInvoice {
  reference: string;
  amount: number;
  payUrl: string;
  expiresAt: number;
}

function bounded<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_ENTRIES) map.delete(map.keys().next().value as K);
}

export function createQpayMemory() {
  const creates = new Map<string, Promise<Invoice>>();
  const inDoubt = new Map<string, true>();
  const invoices = new Map<string, KnownInvoice>();
  const byReference = new Map<string, string>();
  const rows = new Map<string, QpayPaymentCheck>();

  return {
    creating(key: string, pending: Promise<Invoice>): void {
      bounded(creates, key, pending);
      // A failed create is not a made invoice: forget it (an open outcome is kept by numberInDoubt).
      pending.catch(() => {
        if (creates.get(key) === pending) creates.delete(key);
      });
    },
    created: (key: string) => creates.get(key),
    numberInDoubt(key: string): void {
      bounded(inDoubt, key, true);
    },
    isInDoubt: (key: string) => inDoubt.has(key),
    remember(invoiceId: string, known: KnownInvoice): void {
      bounded(invoices, invoiceId, known);
      bounded(byReference, known.reference, invoiceId);
    },
    invoice: (invoiceId: string) => invoices.get(invoiceId),
    invoiceOf: (reference: string) => byReference.get(reference) ?? null,
    rowsRead(invoiceId: string, check: QpayPaymentCheck): void {
      bounded(rows, invoiceId, check);
    },
    lastRows: (invoiceId: string) => rows.get(invoiceId),
  };
}
