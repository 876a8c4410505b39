import { scheduleClock, type Clock } from '../util/clock.js';

/**
 * This device's clock minus the provider's, as the provider's own data proves it — never from an
 * HTTP `Date` header, which a proxy, a load balancer or a provider's front end may set from another
 * clock (the header feeds only the `clock_skew` alarm).
 *
 * The proof: an invoice the provider has just made for the device's own authenticated create call
 * (not a replay) carries its creation time on the provider's clock (Gerege `created`, whole
 * seconds), and the device knows on its own clock when it sent the call and when the answer came.
 * The offset is then known to within the call's duration and a second. QutPay's wire format has no
 * creation time (only `expiresAt`, a moment its own lifetime rule fixes): with QutPay the offset is
 * never proven and `ms()` stays null.
 *
 * A proof is carried forward on the monotonic clock: a wall clock that NTP moves afterwards moves
 * the offset by exactly as much.
 */
/** What a create answer tells: whether it is a replay, and the provider's creation time (ms) when it says. */
type CreateAnswer = { replayed?: boolean; createdAt?: number };

export interface ProvenOffset {
  /** A create answer: `sentAt` is this device's clock when the call was sent. */
  heard(invoice: CreateAnswer, sentAt: number): void;
  /** The offset in ms (this device minus the provider), or null while nothing proved one. */
  ms(): number | null;
}

export function createProvenOffset(clock: Clock): ProvenOffset {
  const mono = scheduleClock(clock);
  let proof: { offsetMs: number; wallMinusMono: number } | null = null;
  return {
    heard(invoice, sentAt) {
      if (invoice.replayed === true || invoice.createdAt === undefined) return;
      const receivedAt = clock.now();
      // Made between the send and the answer; `created` is truncated to the second.
      const offsetMs = Math.round((sentAt + receivedAt) / 2 - (invoice.createdAt + 500));
      proof = { offsetMs, wallMinusMono: receivedAt - mono() };
    },
    ms() {
      if (!proof) return null;
      return proof.offsetMs + (clock.now() - mono() - proof.wallMinusMono);
    },
  };
}
