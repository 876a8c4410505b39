export * from './state.js';
export * from './decide.js';
export type { ObservePort, ObserveResult } from './observe-port.js';
export { createTransitions, type Transitions } from './transitions.js';
export {
  createOrderRepository,
  idempotencyKeyFor,
  referenceFor,
  TransitionRefused,
  type OrderRow,
  type NewOrder,
  type OrderRepository,
  type OrderHistoryEntry,
  type OrderListFilter,
} from './repository.js';
export {
  createOrderService,
  createProviderHealth,
  type OrderService,
  type OrderServiceDeps,
  type OrderInput,
  type ProviderHealth,
  type CatalogPort,
} from './service.js';
export { orderView, screenPhase, type ScreenPhase } from './view.js';
export { safeAppLinks, DEFAULT_APP_LINK_SCHEMES, type AppLink } from './app-links.js';
export { createPaymentWindows, type PaymentWindows, type WindowedOrder } from './window.js';
export { parseReference, isReferenceOf, isDatabaseId, type ParsedReference } from './reference.js';
export { salesFigures, type SalesFigures, type SalesFigure, type SaleKind } from './sales.js';
