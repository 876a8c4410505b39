/**
 * Provider simulator: Gerege- and QutPay-compatible HTTP APIs with webhook delivery and fault
 * injection, written from the providers' documented rules alone (docs/providers.md). It shares no code with payments/ on purpose: it is
 * the other side of every adapter contract test.
 */
export { createSimulator, SIMULATOR_DEFAULTS } from './simulator.js';
export { describeSimulator } from './describe.js';
export { signGeregeWebhook, signQutpayWebhook } from './signing.js';
export { NO_FAULTS } from './faults.js';
export type {
  CreateOutcome,
  FaultConfig,
  FaultName,
  InvoiceRecord,
  SimulatedProvider,
  Simulator,
  SimulatorInfo,
  SimulatorOptions,
  SimulatorRecords,
} from './types.js';
