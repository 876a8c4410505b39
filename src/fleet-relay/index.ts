/**
 * `vendgate relay` (fleet mode): one webhook endpoint for a whole fleet. Verifies each webhook with
 * the device's own pure verify modules, finds the device from the retained route announcements,
 * publishes the raw body and signature headers QoS 1 to `<prefix>/<device>/webhooks/<provider>`
 * and answers 2xx only after the broker's PUBACK. Its own process: it may use fastify (HTTP) and
 * reaches MQTT only through mqtt/'s relay connection.
 */
export { createRelay, type Relay, type RelayDeps } from './relay.js';
export { createRouteTable, type RouteTable } from './routes.js';
export { createLocator, type Locator, type Location } from './locate.js';
export type { RelayCounters } from './counters.js';
export { createKaspiRelay, readKaspiDevicesFile, type KaspiRelay, type KaspiRelayOptions } from './kaspi-relay.js';
export type { KaspiDevice, KaspiCounters } from './kaspi-server.js';
