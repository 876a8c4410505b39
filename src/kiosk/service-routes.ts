import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../util/clock.js';
import type { KioskService } from './types.js';
import { badRequest } from './http-errors.js';
import { ErrorCodes, VendgateError } from '../util/index.js';
import { createServiceAuth, ServiceLockedError, type ServiceAuthSettings, SERVICE_AUTH_DEFAULTS } from './service-auth.js';

const SLOT_PATTERN = /^[A-Za-z0-9_-]{1,16}$/;
const TURN_ON =
  'the service menu is off: set VENDGATE_SERVICE_PIN (6 to 12 digits) in /etc/vendgate/secrets.env, with `sudo vendgate setup` or by hand, and restart the service';

function parseSlot(raw: string): string {
  if (!SLOT_PATTERN.test(raw)) throw badRequest('the slot must be a catalog slot: 1 to 16 letters, digits, - or _');
  return raw;
}

/** Exactly the keys named, or a 400 before anything is done. */
function objectWith(body: unknown, keys: string[], example: string): Record<string, unknown> {
  if (body === undefined && keys.length === 0) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw badRequest(`the body must be a JSON object such as ${example}`);
  for (const key of Object.keys(body)) {
    if (!keys.includes(key)) throw badRequest(`unknown field "${key.slice(0, 32)}"; send ${example}`);
  }
  return body as Record<string, unknown>;
}

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer ([A-Za-z0-9_-]{1,100})$/.exec(header) : null;
  return match?.[1];
}

/**
 * The technician's service menu on the local listener: a PIN gives a short-lived session token
 * (`Authorization: Bearer …`), and only then the overview, the selftest, refill and clear-jam.
 * Without a PIN configured every route but /status answers that the menu is off.
 */
export function registerServiceRoutes(
  app: FastifyInstance,
  service: KioskService,
  clock: Clock,
  settings: ServiceAuthSettings = SERVICE_AUTH_DEFAULTS,
): void {
  const auth = service.pin ? createServiceAuth(service.pin, clock, settings) : null;
  let selftestRunning = false;

  const off = () => new VendgateError(ErrorCodes.FORBIDDEN, TURN_ON);

  app.get('/api/service/status', async () => ({
    enabled: auth !== null,
    message: auth ? 'enter the service PIN' : TURN_ON,
    idleSec: Math.round(settings.idleMs / 1000),
  }));

  app.post('/api/service/login', async (request, reply) => {
    if (!auth) throw off();
    const { pin } = objectWith(request.body, ['pin'], '{"pin":"123456"}');
    try {
      return auth.login(pin);
    } catch (err) {
      if (err instanceof ServiceLockedError) reply.header('retry-after', String(err.retryAfterSec));
      throw err;
    }
  });

  // Everything below needs the session; checked before the body is looked at.
  app.register(async (scoped) => {
    scoped.addHook('preHandler', async (request) => {
      if (!auth) throw off();
      auth.check(bearer(request));
    });

    scoped.post('/api/service/logout', async (request) => {
      auth?.logout(bearer(request));
      return { ok: true };
    });

    scoped.get('/api/service/overview', async () => service.overview());

    scoped.post('/api/service/selftest', async (request) => {
      objectWith(request.body, [], '{}');
      // One at a time: the checks touch the provider, the broker and the card.
      if (selftestRunning) throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'a selftest is already running; wait for its result');
      selftestRunning = true;
      try {
        return await service.selftest();
      } finally {
        selftestRunning = false;
      }
    });

    scoped.post<{ Params: { slot: string } }>('/api/service/slots/:slot/refill', async (request) => {
      const slot = parseSlot(request.params.slot);
      const { count } = objectWith(request.body, ['count'], '{"count":12}');
      if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > 10_000) {
        throw badRequest('count must be a whole number from 0 to 10000 (the items now in the slot)');
      }
      return service.refill(slot, count);
    });

    scoped.post<{ Params: { slot: string } }>('/api/service/slots/:slot/clear-jam', async (request) => {
      const slot = parseSlot(request.params.slot);
      objectWith(request.body, [], '{}');
      return service.clearJam(slot);
    });
  });
}
