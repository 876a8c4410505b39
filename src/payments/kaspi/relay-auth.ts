/**
 * How a device proves itself to the fleet relay's Kaspi caller (docs/providers.md, "Kaspi QR"):
 * HMAC-SHA256 with a secret the operator provisions per device, over the timestamp, the method, the
 * path with its query and the SHA-256 of the body. The relay holds each device's secret beside its
 * Kaspi device token and uses only the token of the device whose secret signed the request. Pure:
 * both sides (payments/kaspi on the device, fleet-relay on the operator's server) use this file.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const KASPI_RELAY_HEADERS = {
  device: 'x-vendgate-device',
  timestamp: 'x-vendgate-timestamp',
  signature: 'x-vendgate-signature',
} as const;

/** A signed request older or newer than this is refused (its replay is harmless anyway: see the relay's journal). */
export const KASPI_RELAY_TOLERANCE_SEC = 300;

function payload(timestampSec: number, method: string, pathWithQuery: string, body: string): string {
  const digest = createHash('sha256').update(body, 'utf8').digest('hex');
  return `${timestampSec}\n${method.toUpperCase()}\n${pathWithQuery}\n${digest}`;
}

export function signKaspiRelayRequest(
  secret: string,
  request: { deviceId: string; method: string; pathWithQuery: string; body: string; nowMs: number },
): Record<string, string> {
  const ts = Math.floor(request.nowMs / 1000);
  const mac = createHmac('sha256', secret)
    .update(payload(ts, request.method, request.pathWithQuery, request.body), 'utf8')
    .digest('hex');
  return {
    [KASPI_RELAY_HEADERS.device]: request.deviceId,
    [KASPI_RELAY_HEADERS.timestamp]: String(ts),
    [KASPI_RELAY_HEADERS.signature]: `v1=${mac}`,
  };
}

export type KaspiRelayAuthFailure = 'missing' | 'unknown_device' | 'stale' | 'bad_signature';

/** Which device signed this request, or why none did. `secretOf` returns a device's secrets (rotation: several). */
export function verifyKaspiRelayRequest(
  headers: Record<string, string | string[] | undefined>,
  request: { method: string; pathWithQuery: string; body: string; nowMs: number; toleranceSec?: number },
  secretOf: (deviceId: string) => readonly string[] | undefined,
): { ok: true; deviceId: string } | { ok: false; reason: KaspiRelayAuthFailure } {
  const one = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? undefined : value;
  };
  const deviceId = one(KASPI_RELAY_HEADERS.device);
  const tsText = one(KASPI_RELAY_HEADERS.timestamp);
  const signature = one(KASPI_RELAY_HEADERS.signature);
  if (!deviceId || !tsText || !signature || !/^\d{1,12}$/.test(tsText) || !/^v1=[0-9a-f]{64}$/.test(signature))
    return { ok: false, reason: 'missing' };
  const secrets = secretOf(deviceId);
  if (!secrets || secrets.length === 0) return { ok: false, reason: 'unknown_device' };
  const ts = Number(tsText);
  if (Math.abs(request.nowMs / 1000 - ts) > (request.toleranceSec ?? KASPI_RELAY_TOLERANCE_SEC)) return { ok: false, reason: 'stale' };
  const given = Buffer.from(signature.slice(3), 'hex');
  const text = payload(ts, request.method, request.pathWithQuery, request.body);
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(text, 'utf8').digest();
    if (expected.length === given.length && timingSafeEqual(expected, given)) return { ok: true, deviceId };
  }
  return { ok: false, reason: 'bad_signature' };
}
