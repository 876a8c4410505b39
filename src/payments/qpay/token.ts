/**
 * QPay v2 tokens: `POST /v2/auth/token` with HTTP Basic, then `POST /v2/auth/refresh` with the
 * refresh token as bearer while it lives. Kept in memory only, renewed a minute before expiry and
 * after a 401, one fetch in flight however many calls wait. Tokens never reach a log line: errors
 * carry the HTTP status, not the request.
 */
import type { Clock } from '../../util/clock.js';
import { ProviderError } from '../types.js';
import { parseWire, type ProviderHttpClient } from '../http.js';
import { qpayTokenSchema, type QpayToken } from './wire.js';

export const QPAY_TOKEN_EARLY_REFRESH_MS = 60_000;
/** An `expires_in` above this is a Unix time, not a lifetime: QPay's docs show neither for sure. */
const UNIX_TIME_FLOOR_SEC = 1_000_000_000;

export interface QpayTokenSource {
  get(): Promise<string>;
  /** Drops `token` if it is still the cached one (a 401 said it is no longer good). */
  invalidate(token: string): void;
}

/** When a token with this `expires_in` dies, in ms on this clock: the shorter reading when unsure. */
export function expiryOf(expiresIn: number, nowMs: number): number {
  if (expiresIn >= UNIX_TIME_FLOOR_SEC) return expiresIn * 1_000;
  return nowMs + expiresIn * 1_000;
}

export function createQpayTokenSource(
  deps: { http: ProviderHttpClient; clock: Clock },
  credentials: { clientId: string; clientSecret: string },
): QpayTokenSource {
  let access: { token: string; refreshAt: number } | undefined;
  let refresh: { token: string; usableUntil: number } | undefined;
  let inFlight: Promise<string> | undefined;
  const basic = Buffer.from(`${credentials.clientId}:${credentials.clientSecret}`, 'utf8').toString('base64');

  function keep(body: QpayToken): string {
    const now = deps.clock.now();
    access = { token: body.access_token, refreshAt: expiryOf(body.expires_in, now) - QPAY_TOKEN_EARLY_REFRESH_MS };
    refresh =
      body.refresh_token && body.refresh_expires_in
        ? { token: body.refresh_token, usableUntil: expiryOf(body.refresh_expires_in, now) - QPAY_TOKEN_EARLY_REFRESH_MS }
        : undefined;
    return body.access_token;
  }

  async function login(): Promise<string> {
    try {
      const response = await deps.http.request({
        method: 'POST',
        path: '/v2/auth/token',
        headers: { authorization: `Basic ${basic}` },
        retry: 'read',
      });
      return keep(parseWire(qpayTokenSchema, response.body, 'qpay token'));
    } catch (err) {
      if (err instanceof ProviderError && err.kind === 'auth') {
        throw new ProviderError(
          'auth',
          `qpay refused the client credentials (HTTP ${err.httpStatus}): check provider.clientId and VENDGATE_PROVIDER_CLIENT_SECRET`,
          { httpStatus: err.httpStatus, providerCode: err.providerCode, cause: err },
        );
      }
      throw err;
    }
  }

  async function renew(): Promise<string> {
    const held = refresh;
    if (held && deps.clock.now() < held.usableUntil) {
      try {
        const response = await deps.http.request({
          method: 'POST',
          path: '/v2/auth/refresh',
          headers: { authorization: `Bearer ${held.token}` },
          retry: 'read',
        });
        return keep(parseWire(qpayTokenSchema, response.body, 'qpay token refresh'));
      } catch (err) {
        // A refused refresh token is not the end: the client credentials may still log in.
        if (!(err instanceof ProviderError && err.kind === 'auth')) throw err;
        refresh = undefined;
      }
    }
    return login();
  }

  return {
    async get() {
      if (access && deps.clock.now() < access.refreshAt) return access.token;
      inFlight ??= renew().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    invalidate(token) {
      if (access?.token === token) access = undefined;
    },
  };
}
