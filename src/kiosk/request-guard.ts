import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ErrorCodes, VendgateError } from '../util/index.js';
import { HttpRefusal } from './http-errors.js';

/**
 * Who may drive the local API. The kiosk browser opens web pages, and any page it opens can send
 * requests to 127.0.0.1: a cross-site form POST (no preflight) or a DNS-rebound name that resolves
 * to 127.0.0.1. So every request must name this device in `Host`, and a state-changing one must be
 * JSON and come from the kiosk's own page (`Origin` equal to this listener) or from no page at all
 * (curl and the CLI send no Origin; browsers always send one on a cross-origin POST).
 */
export interface RequestGuardSettings {
  /** The listener's bind address; allowed as a Host when it is not a wildcard. */
  host: string;
  /** Extra names the kiosk page is opened under (`http.local.allowedHosts`). */
  allowedHosts?: readonly string[];
}

const ALWAYS_ALLOWED = ['127.0.0.1', 'localhost', '::1'];
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Demo-only sandbox routes: the "phone" page posts without a body; Host and Origin still apply. */
const JSON_EXEMPT = /^\/sandbox\//;

function forbidden(message: string): VendgateError {
  return new VendgateError(ErrorCodes.FORBIDDEN, message);
}

/** `host[:port]` or `[v6]:port` → the host name, lower case. */
export function hostName(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase();
  if (value.startsWith('[')) return value.slice(1, value.indexOf(']') > 0 ? value.indexOf(']') : undefined);
  const colon = value.lastIndexOf(':');
  return colon >= 0 ? value.slice(0, colon) : value;
}

export function installRequestGuard(app: FastifyInstance, settings: RequestGuardSettings): void {
  const allowed = new Set([...ALWAYS_ALLOWED, ...(settings.allowedHosts ?? []).map((h) => h.toLowerCase())]);
  if (settings.host !== '0.0.0.0' && settings.host !== '::') allowed.add(settings.host.toLowerCase());

  function check(request: FastifyRequest): void {
    const host = request.headers.host;
    if (!host || !allowed.has(hostName(host))) {
      throw forbidden(
        `Host "${String(host ?? '').slice(0, 100)}" is not this device; open the kiosk at http://127.0.0.1 or add the name to http.local.allowedHosts`,
      );
    }
    if (SAFE_METHODS.has(request.method)) return;
    const origin = request.headers.origin;
    if (origin !== undefined && origin.toLowerCase() !== `http://${host.toLowerCase()}`) {
      throw forbidden(
        `Origin "${origin.slice(0, 100)}" may not change anything here: only the kiosk's own page (or a client without Origin, such as curl) may`,
      );
    }
    if (JSON_EXEMPT.test(request.url)) return;
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      throw new HttpRefusal(415, 'unsupported Content-Type; send application/json');
    }
  }

  // onRequest: before the body is read, so a refused request costs nothing and reaches no route.
  app.addHook('onRequest', async (request) => {
    check(request);
  });
}
