import { parseReference } from '../orders/index.js';
import type { PaymentProvider } from '../payments/index.js';
import type { RemoteLineage } from '../store/index.js';

/**
 * The provider's records of this device, read at start with the device's own credentials: the
 * order references of the invoices its Events API reports over the backfill's look-back window.
 * A reference names the device, the database and the order number (`<device>-<db>-<order>-<nonce>`),
 * and the provider keeps them whatever happens to the SD card, so they are the mark an old card
 * image cannot roll back (src/store/lineage-verdict.ts weighs it with the local ones).
 *
 * Null when the provider has no Events API (QutPay: the local marks decide alone) or did not
 * answer in time: a start never waits on an outage for long.
 */
export async function readProviderLineage(
  provider: Pick<PaymentProvider, 'listEvents'>,
  input: { deviceId: string; dbId: string; sinceSec: number; timeoutMs: number; maxPages?: number },
): Promise<RemoteLineage | null> {
  const listEvents = provider.listEvents?.bind(provider);
  if (!listEvents) return null;
  const read = async (): Promise<RemoteLineage> => {
    let thisDbMaxOrder: number | null = null;
    const others = new Set<string>();
    let startingAfter: string | undefined;
    for (let page = 0; page < (input.maxPages ?? 50); page += 1) {
      const answer = await listEvents(
        startingAfter ? { createdAfterSec: input.sinceSec, startingAfter } : { createdAfterSec: input.sinceSec },
      );
      for (const { event } of answer.events) {
        const parsed = event.reference ? parseReference(event.reference) : null;
        if (!parsed || parsed.deviceId !== input.deviceId) continue;
        if (parsed.dbId === input.dbId) thisDbMaxOrder = Math.max(thisDbMaxOrder ?? 0, parsed.orderId);
        else others.add(parsed.dbId);
      }
      const last = answer.events.at(-1);
      if (!answer.hasMore || !last) break;
      startingAfter = last.event.eventId;
    }
    return { thisDbMaxOrder, otherDbIds: [...others] };
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), input.timeoutMs);
  });
  try {
    return await Promise.race([read().catch(() => null), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
