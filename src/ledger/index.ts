export {
  createLedger,
  type Ledger,
  type LedgerSettings,
  type Observation,
  type ObserveResult,
  type Channel,
  observationOf,
} from './ledger.js';
export { createReconciler, type Reconciler, type ReconcilerSettings } from './reconciler.js';
export { compareWithProvider, type Finding, type FindingKind, type LocalInvoice } from './compare.js';
export { createOrphanSweep, type OrphanSweep, type OrphanCandidate } from './orphans.js';
export { raiseForgedEvent } from './forged.js';
export { createCaseSettlement, CASE_OUTCOMES, type CaseSettlement, type CaseOutcome, type SettleAnswer } from './settle.js';
