import type { Outbox } from '../outbox/index.js';

/**
 * A body whose claims the provider contradicts (another reference than the one the provider holds,
 * a refund the provider's own records do not list). It was signed with a secret every relay replica
 * holds, so it is the relay's word, not the provider's: nothing is moved on it, and a person is told.
 * The alarm is critical because someone who can sign webhooks is trying to move money.
 */
export function raiseForgedEvent(
  outbox: Pick<Outbox, 'raiseAlarm'>,
  name: `forged_event/${string}`,
  detail: { what: string } & Record<string, unknown>,
): void {
  outbox.raiseAlarm(
    name,
    'critical',
    `a signed event whose claims the provider contradicts: ${detail.what}. Nothing was moved on it; find who can sign webhooks ` +
      '(the fleet relay, a leaked webhook secret), rotate the secret, then close this with vendgate settle',
    { ...detail, settle: `vendgate settle ${name} checked` },
  );
}
