/**
 * Gerege OAuth2 client-credentials tokens: fetched on first use, cached until 60 s before expiry,
 * one fetch in flight at a time however many calls wait for it.
 */
import type { Clock } from '../../util/clock.js';
import { ProviderError } from '../types.js';
import { parseWire, type ProviderHttpClient } from '../http.js';
import { geregeTokenSchema } from './wire.js';

/** Refresh this long before the provider's expiry, so a token never dies in the middle of a call. */
export const TOKEN_EARLY_REFRESH_MS = 60_000;

export interface TokenSource {
  get(): Promise<string>;
  /** Drops `token` if it is still the cached one (a 401 said it is no longer good). */
  invalidate(token: string): void;
}

export function createTokenSource(
  deps: { http: ProviderHttpClient; clock: Clock },
  credentials: { clientId: string; clientSecret: string; scope?: string },
): TokenSource {
  let cached: { token: string; refreshAt: number } | undefined;
  let inFlight: Promise<string> | undefined;
  const basic = Buffer.from(`${credentials.clientId}:${credentials.clientSecret}`, 'utf8').toString('base64');

  async function fetchToken(): Promise<string> {
    let response;
    try {
      response = await deps.http.request({
        method: 'POST',
        path: '/oauth2/token',
        headers: { authorization: `Basic ${basic}` },
        form: { grant_type: 'client_credentials', ...(credentials.scope ? { scope: credentials.scope } : {}) },
        retry: 'read',
      });
    } catch (err) {
      if (err instanceof ProviderError && err.kind === 'auth') {
        throw new ProviderError(
          'auth',
          `gerege refused the client credentials (HTTP ${err.httpStatus}): check provider.clientId and VENDGATE_PROVIDER_CLIENT_SECRET`,
          {
            providerCode: err.providerCode,
            httpStatus: err.httpStatus,
            cause: err,
          },
        );
      }
      throw err;
    }
    const body = parseWire(geregeTokenSchema, response.body, 'gerege token');
    cached = { token: body.access_token, refreshAt: deps.clock.now() + body.expires_in * 1_000 - TOKEN_EARLY_REFRESH_MS };
    return body.access_token;
  }

  return {
    async get() {
      if (cached && deps.clock.now() < cached.refreshAt) return cached.token;
      inFlight ??= fetchToken().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    invalidate(token) {
      if (cached?.token === token) cached = undefined;
    },
  };
}
