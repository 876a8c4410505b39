import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/util/clock.js';
import { createServiceAuth } from '../../src/kiosk/service-auth.js';

const PIN = '482916';
const SETTINGS = { maxTries: 3, lockoutMs: 60_000, idleMs: 120_000 };

/** The service menu's PIN and session rules on a clock the test moves. */
describe('service menu PIN and session', () => {
  it('a session ends after the idle time, and each use keeps it alive', () => {
    const clock = createManualClock();
    const auth = createServiceAuth(PIN, clock, SETTINGS);
    const { token } = auth.login(PIN);
    clock.advance(100_000);
    auth.check(token);
    clock.advance(100_000);
    auth.check(token);
    clock.advance(120_001);
    expect(() => auth.check(token)).toThrow(expect.objectContaining({ code: 'VG_ERR_UNAUTHORIZED' }));
  });

  it('the lock-out ends after its time; a new login ends the previous session', () => {
    const clock = createManualClock();
    const auth = createServiceAuth(PIN, clock, SETTINGS);
    expect(() => auth.login('1')).toThrow(expect.objectContaining({ code: 'VG_ERR_UNAUTHORIZED' }));
    expect(() => auth.login(12345)).toThrow(expect.objectContaining({ code: 'VG_ERR_UNAUTHORIZED' }));
    expect(() => auth.login(`${PIN}0`)).toThrow(expect.objectContaining({ code: 'VG_ERR_RATE_LIMITED', retryAfterSec: 60 }));
    expect(() => auth.login(PIN)).toThrow(expect.objectContaining({ code: 'VG_ERR_RATE_LIMITED' }));
    clock.advance(60_000);
    const first = auth.login(PIN).token;
    const second = auth.login(PIN).token;
    expect(() => auth.check(first)).toThrow(expect.objectContaining({ code: 'VG_ERR_UNAUTHORIZED' }));
    auth.check(second);
    auth.logout(second);
    expect(() => auth.check(second)).toThrow(expect.objectContaining({ code: 'VG_ERR_UNAUTHORIZED' }));
    expect(() => auth.check(undefined)).toThrow(expect.objectContaining({ code: 'VG_ERR_UNAUTHORIZED' }));
  });
});
