import { describe, expect, it } from 'vitest';
import { CANONICAL_STATUSES } from '../../src/payments/types.js';
import {
  GEREGE_STATUS_MAP,
  mapGeregeRefundStatus,
  mapGeregeStatus,
  mapQutpayRefundStatus,
  mapQutpayStatus,
  QUTPAY_STATUS_MAP,
} from '../../src/payments/adapters.js';

// Written out from docs/providers.md "What the core sees", not copied from the code, so a typo on either side fails here.
const GEREGE_TABLE = {
  requires_payment: 'pending',
  claimed: 'pending',
  processing: 'pending',
  requires_capture: 'authorized',
  succeeded: 'paid',
  canceled: 'canceled',
  expired: 'expired',
} as const;
const QUTPAY_TABLE = {
  new: 'pending',
  pending: 'pending',
  paid: 'paid',
  cancelled: 'canceled',
  failed: 'canceled',
  expired: 'expired',
  partially_refunded: 'partially_refunded',
  refunded: 'refunded',
} as const;

describe('status mapping tables', () => {
  it.each(Object.entries(GEREGE_TABLE))('Gerege %s → %s', (word, canonical) => {
    expect(mapGeregeStatus(word)).toBe(canonical);
  });

  it.each(Object.entries(QUTPAY_TABLE))('QutPay %s → %s', (word, canonical) => {
    expect(mapQutpayStatus(word)).toBe(canonical);
  });

  it('QutPay maps exactly the words of its table', () => {
    expect(Object.keys(QUTPAY_STATUS_MAP).sort()).toEqual(Object.keys(QUTPAY_TABLE).sort());
  });

  it('every mapped word lands on a canonical status', () => {
    for (const status of [...Object.values(GEREGE_STATUS_MAP), ...Object.values(QUTPAY_STATUS_MAP)]) {
      expect(CANONICAL_STATUSES).toContain(status);
    }
  });

  it('words a provider may add later, or inherited object keys, are unknown (the adapter treats them as pending)', () => {
    for (const word of ['on_hold', 'SUCCEEDED', 'toString', '__proto__', 'constructor', '']) {
      expect(mapGeregeStatus(word)).toBeUndefined();
      expect(mapQutpayStatus(word)).toBeUndefined();
    }
  });

  it('refund outcomes: Gerege succeeded|pending|failed, anything else unknown', () => {
    expect(['succeeded', 'pending', 'failed', 'canceled'].map(mapGeregeRefundStatus)).toEqual([
      'succeeded',
      'pending',
      'failed',
      undefined,
    ]);
    expect(['succeeded', 'pending', 'failed', 'mystery'].map(mapQutpayRefundStatus)).toEqual(['succeeded', 'pending', 'failed', undefined]);
  });
});
