export { createLedger, refundKeyFor, queueRefundFor, type Ledger, type Observation, type ObserveResult, type Channel } from './ledger.js';
