export { createLedger, type Ledger, type LedgerSettings, type Observation, type ObserveResult, type Channel, observationOf } from './ledger.js';
