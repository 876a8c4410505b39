export { createLedger, refundKeyFor, type Ledger, type Observation, type ObserveResult, type Channel } from './ledger.js';
