import { describe, expect, it } from 'vitest';
import { reconcile } from '../../src/cli/reconcile.js';
import type { EventPage, WebhookEvent } from '../../src/payments/types.js';
import { createFakeProvider } from '../fakes/provider.js';

/**
 * `vendgate reconcile` reads the provider's events for invoices this database has no row for. Which
 * events may be this device's is the provider's own reading of the body (payments/webhooks.ts): an
 * event under another device's reference is not read, one that names no reference is.
 */
function event(objectId: string, body: unknown): { event: WebhookEvent; rawBody: Buffer } {
  return {
    event: { eventId: `evt_${objectId}`, type: 'x', objectId, livemode: false, createdAt: null } as WebhookEvent,
    rawBody: Buffer.from(JSON.stringify(body)),
  };
}

function providerNamed(name: 'gerege' | 'qutpay', events: EventPage['events']) {
  const fake = createFakeProvider();
  return { fake, provider: { ...fake.provider, name, listEvents: async () => ({ events, hasMore: false }) } };
}

describe('reconcile: which provider events may be this device’s', () => {
  it('Gerege: an intent under another device’s reference is not read; ours and a refund (no reference) are', async () => {
    const { fake, provider } = providerNamed('gerege', [
      event('pi_theirs', { data: { object: { id: 'pi_theirs', reference: 'vm-other-db1-7' } } }),
      event('pi_ours', { data: { object: { id: 'pi_ours', reference: 'vm-01-db1-8' } } }),
      event('pi_refunded', { data: { object: { id: 're_1', payment_intent: 'pi_refunded', amount: 100, status: 'succeeded' } } }),
    ]);
    await reconcile({ rows: [], provider, deviceId: 'vm-01' }, 0);
    expect(fake.callsOf('getInvoice').map((c) => c.arg)).toEqual(['pi_ours', 'pi_refunded']);
  });

  it('QutPay: the reference is the invoice’s externalOrderId', async () => {
    const { fake, provider } = providerNamed('qutpay', [
      event('q_theirs', { invoice: { id: 'q_theirs', externalOrderId: 'vm-other-db1-7' } }),
      event('q_ours', { invoice: { id: 'q_ours', externalOrderId: 'vm-01-db1-8-0af3' } }),
    ]);
    await reconcile({ rows: [], provider, deviceId: 'vm-01' }, 0);
    expect(fake.callsOf('getInvoice').map((c) => c.arg)).toEqual(['q_ours']);
  });
});
