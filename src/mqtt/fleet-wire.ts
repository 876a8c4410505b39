/**
 * What the relay and a device say to each other over the operator's broker (fleet mode). Pure: no
 * MQTT client here, so the relay, the device and the tests share one definition of the wire.
 *
 *   <prefix>/<device>/route                  retained, from the device: which order references it owns
 *   <prefix>/<device>/webhooks/<provider>    QoS 1, from the relay: one webhook, bytes unchanged
 *
 * A webhook message is one JSON line with the signature headers, a newline, then the raw body exactly
 * as the provider sent it. MQTT 3.1.1 (what aedes and every bridge speak) has no user properties,
 * and base64 inside JSON would hide the body from `mosquitto_sub`; this keeps both readable.
 */

export const ROUTE_VERSION = 1;

export interface RouteAnnouncement {
  v: number;
  deviceId: string;
  /** Order references that start with one of these belong to the device (`<device>-<db>-`). */
  referencePrefixes: string[];
  /** Providers whose webhooks the device takes from the broker. */
  providers: string[];
  /** ISO time of the announcement, for operators. */
  at: string;
}

export interface FleetTopics {
  route(deviceId: string): string;
  webhook(deviceId: string, provider: string): string;
  /** Subscription filter for every device's route (the relay). */
  allRoutes: string;
  /** The device id of a route topic, or null. */
  routeDevice(topic: string): string | null;
}

export function createFleetTopics(prefix: string): FleetTopics {
  return {
    route: (deviceId) => `${prefix}/${deviceId}/route`,
    webhook: (deviceId, provider) => `${prefix}/${deviceId}/webhooks/${provider}`,
    allRoutes: `${prefix}/+/route`,
    routeDevice(topic) {
      const parts = topic.split('/');
      return parts.length === 3 && `${parts[0]}/` === `${prefix}/` && parts[2] === 'route' && parts[1] !== '' ? parts[1]! : null;
    },
  };
}

export type ForwardedHeaders = Record<string, string>;

/**
 * Picks the forwarded headers: the names the provider's verify reads (the relay takes them from the
 * providers' webhook table, payments/webhooks.ts), nothing else — no cookies, no IPs. Lower-case
 * names; a repeated header's values joined like Node does.
 */
export function pickForwardedHeaders(headers: Record<string, string | string[] | undefined>, names: readonly string[]): ForwardedHeaders {
  const out: ForwardedHeaders = {};
  for (const name of names) {
    const value = headers[name];
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export function encodeWebhookMessage(headers: ForwardedHeaders, rawBody: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${JSON.stringify(headers)}\n`, 'utf8'), rawBody]);
}

export class FleetWireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FleetWireError';
  }
}

/** The inverse of encodeWebhookMessage. Throws FleetWireError naming what is wrong. */
export function decodeWebhookMessage(payload: Buffer): { headers: ForwardedHeaders; rawBody: Buffer } {
  const newline = payload.indexOf(0x0a);
  if (newline < 0) throw new FleetWireError('a fleet webhook message is "<headers JSON>\\n<raw body>": no newline found');
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.subarray(0, newline).toString('utf8'));
  } catch {
    throw new FleetWireError('the first line of a fleet webhook message is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new FleetWireError('the headers line must be a JSON object');
  const headers: ForwardedHeaders = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value !== 'string') throw new FleetWireError(`header ${name} must be a string`);
    headers[name.toLowerCase()] = value;
  }
  return { headers, rawBody: Buffer.from(payload.subarray(newline + 1)) };
}

/**
 * A device announces one prefix per live database (one, in practice): these bounds leave room for
 * any real announcement and keep a hostile one from costing the relay more than a few microseconds.
 * A route is read by every relay replica at every reconnect, so its cost is paid again and again.
 */
export const ROUTE_MAX_BYTES = 4_096;
export const ROUTE_MAX_PREFIXES = 16;

export type RouteDropReason = 'too_large' | 'too_many_prefixes';

/**
 * A route announcement as the relay reads it: `dropped` when it is over the bounds above (the relay
 * counts it and forgets the device's route, as for any announcement it cannot use); otherwise the
 * route, or null for anything that is not one.
 */
export function readRouteAnnouncement(
  topicDeviceId: string,
  payload: Buffer,
): { route: RouteAnnouncement | null; dropped: RouteDropReason | null } {
  if (payload.length > ROUTE_MAX_BYTES) return { route: null, dropped: 'too_large' };
  const route = parseRouteAnnouncement(topicDeviceId, payload);
  if (route && route.referencePrefixes.length > ROUTE_MAX_PREFIXES) return { route: null, dropped: 'too_many_prefixes' };
  return { route, dropped: null };
}

/** Parses a route announcement; null for anything that is not one (an empty retained message clears it). */
export function parseRouteAnnouncement(topicDeviceId: string, payload: Buffer): RouteAnnouncement | null {
  if (payload.length === 0) return null;
  let body: unknown;
  try {
    body = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  if (body === null || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  if (b.deviceId !== topicDeviceId || !Array.isArray(b.referencePrefixes)) return null;
  // A device may only claim references that start with its own id: its route topic is the only one
  // its broker account may write, so this stops one device from drawing another's payments.
  const prefixes = b.referencePrefixes.filter((p): p is string => typeof p === 'string' && p.startsWith(`${topicDeviceId}-`));
  if (prefixes.length === 0) return null;
  const providers = Array.isArray(b.providers) ? b.providers.filter((p): p is string => typeof p === 'string') : [];
  return {
    v: typeof b.v === 'number' ? b.v : ROUTE_VERSION,
    deviceId: topicDeviceId,
    referencePrefixes: prefixes,
    providers,
    at: typeof b.at === 'string' ? b.at : '',
  };
}
