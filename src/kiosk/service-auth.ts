import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../util/clock.js';
import { ErrorCodes, VendgateError } from '../util/index.js';

/**
 * The service menu's door: a PIN typed on the kiosk screen, compared in constant time, and a
 * session token that expires after a few idle minutes. A few wrong PINs lock every attempt out for
 * a while (right PIN included), so a customer cannot try PINs one after another at the screen.
 * Held in memory only: a restart ends every session and the lock-out with it.
 */
export interface ServiceAuthSettings {
  /** Wrong PINs in a row before the lock-out. */
  maxTries: number;
  lockoutMs: number;
  /** A session unused this long is over. */
  idleMs: number;
}

export const SERVICE_AUTH_DEFAULTS: ServiceAuthSettings = { maxTries: 5, lockoutMs: 5 * 60_000, idleMs: 3 * 60_000 };

export interface ServiceAuth {
  /** A new session token for the right PIN; throws UNAUTHORIZED (wrong PIN) or RATE_LIMITED (locked out, `retryAfterSec`). */
  login(pin: unknown): { token: string; idleSec: number };
  /** Throws UNAUTHORIZED unless `token` is the live session; a valid call keeps it alive. */
  check(token: string | undefined): void;
  logout(token: string | undefined): void;
}

export class ServiceLockedError extends VendgateError<typeof ErrorCodes.RATE_LIMITED> {
  readonly retryAfterSec: number;
  constructor(retryAfterSec: number) {
    super(ErrorCodes.RATE_LIMITED, `too many wrong PINs: the service menu is locked for ${retryAfterSec} s`);
    this.retryAfterSec = retryAfterSec;
  }
}

/** Both sides hashed first, so the comparison takes the same time whatever the lengths. */
const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function createServiceAuth(pin: string, clock: Clock, settings: ServiceAuthSettings = SERVICE_AUTH_DEFAULTS): ServiceAuth {
  const expected = digest(pin);
  let wrong = 0;
  let lockedUntil = 0;
  /** One technician at one screen: a new login ends the previous session. */
  let session: { token: Buffer; lastUsed: number } | null = null;

  const unauthorized = (message: string) => new VendgateError(ErrorCodes.UNAUTHORIZED, message);

  function live(token: string | undefined): boolean {
    if (!session || token === undefined) return false;
    if (clock.now() - session.lastUsed > settings.idleMs) {
      session = null;
      return false;
    }
    const given = digest(token);
    return timingSafeEqual(given, digest(session.token.toString('base64url')));
  }

  return {
    login(given) {
      const now = clock.now();
      if (now < lockedUntil) throw new ServiceLockedError(Math.ceil((lockedUntil - now) / 1000));
      const text = typeof given === 'string' ? given.slice(0, 64) : '';
      if (!timingSafeEqual(digest(text), expected)) {
        wrong += 1;
        if (wrong >= settings.maxTries) {
          wrong = 0;
          lockedUntil = now + settings.lockoutMs;
          throw new ServiceLockedError(Math.ceil(settings.lockoutMs / 1000));
        }
        throw unauthorized(`wrong PIN (${settings.maxTries - wrong} tries left before a lock-out)`);
      }
      wrong = 0;
      session = { token: randomBytes(32), lastUsed: now };
      return { token: session.token.toString('base64url'), idleSec: Math.round(settings.idleMs / 1000) };
    },
    check(token) {
      if (!live(token) || !session) throw unauthorized('no service session, or it expired: enter the service PIN');
      session.lastUsed = clock.now();
    },
    logout(token) {
      if (live(token)) session = null;
    },
  };
}
