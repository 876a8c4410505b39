export { createVendRunner, type VendRunner, type VendRunnerDeps, type VendRunnerSettings } from './runner.js';
export { createRefundWorker, type RefundWorker, type RefundRow, type RefundWorkerSettings } from './refunds.js';
export { createVendJobRepository, type VendJobRow, type VendJobState } from './jobs.js';
export { createSettlement, type Settlement, type ReceiptPort } from './settlement.js';
export { queueRefundFor, queueVendFor, refundKeyFor, refundExists, type RefundToQueue } from './queue.js';
