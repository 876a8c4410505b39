/**
 * Everything each real adapter exports: its factory, status tables, signature helpers and wire
 * schemas. For the tests and the fleet relay's Kaspi caller. The device's money path imports
 * `./index.js` instead, where `createProvider` loads only the adapter `provider.name` names:
 * importing this file evaluates all four adapters and their wire schemas.
 */
export * from './gerege/index.js';
export * from './qutpay/index.js';
export * from './qpay/index.js';
export * from './kaspi/index.js';
