/**
 * Provider simulator: Gerege- and QutPay-compatible HTTP APIs with webhook delivery and fault
 * injection, and the two fiscal registers (eBarimt PosAPI, Webkassa-like) beside them, written from the providers' documented rules alone (docs/providers.md). It shares no code with payments/ on purpose: it is
 * the other side of every adapter contract test.
 */
export { createSimulator, SIMULATOR_DEFAULTS } from './simulator.js';
export { describeSimulator } from './describe.js';
export { signGeregeWebhook, signQutpayWebhook } from './signing.js';
export { NO_FAULTS } from './faults.js';
export { NO_REGISTER_FAULTS, type RegisterFaults } from './register-faults.js';
export { EBARIMT_SIM_DEFAULTS, type EbarimtMerchant, type EbarimtSimOptions } from './ebarimt-state.js';
export { WEBKASSA_SIM_DEFAULTS, type WebkassaSimOptions } from './webkassa-state.js';
export type { EbarimtSimulator, EbarimtSimRecords } from './ebarimt-routes.js';
export type { WebkassaSimulator, WebkassaSimRecords } from './webkassa-routes.js';
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
