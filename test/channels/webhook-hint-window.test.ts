import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWebhookInbox } from '../../src/channels/webhook/index.js';
import { openDatabase } from '../../src/store/index.js';
import { HINT_WINDOW_MS, qpayHintEvent } from '../../src/payments/qpay/index.js';

/**
 * QPay's callbacks are unsigned hints, stored once per order per window so that a flood costs one
 * read per window. A hint must never be swallowed by an earlier one of its window that was already
 * worked (a forger's, sent just before the payment): it is stored for the next window instead.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function inbox() {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-hint-'));
  dirs.push(dir);
  const db = openDatabase(join(dir, 'vendgate.db'));
  return { db, inbox: createWebhookInbox(db) };
}

describe('qpay hints in the inbox', () => {
  it('a hint whose window twin was already worked is kept for the next window, due when it opens; a flood adds nothing more', () => {
    const { db, inbox: box } = inbox();
    const t0 = 1_000 * HINT_WINDOW_MS + 100;
    const forged = qpayHintEvent('vm-1-ab-1-0badf00d', 'INV-1', t0);
    expect(box.add(forged, Buffer.alloc(0), 'qpay', 'webhook', t0)).toEqual({ inserted: true, handled: true });
    // Unworked: a second hint of the window is the same read, nothing new.
    expect(box.add(qpayHintEvent('vm-1-ab-1-0badf00d', 'INV-1', t0 + 1), Buffer.alloc(0), 'qpay', 'webhook', t0 + 1).inserted).toBe(false);
    box.markProcessed(forged.eventId, t0 + 50);

    const real = qpayHintEvent('vm-1-ab-1-0badf00d', 'INV-1', t0 + 200);
    expect(box.add(real, Buffer.alloc(0), 'qpay', 'webhook', t0 + 200)).toEqual({ inserted: true, handled: true });
    const next = `qpay-hint:vm-1-ab-1-0badf00d:${1_001}`;
    expect(box.due(t0 + 300, 10, 3_600_000).map((r) => r.event_id)).toEqual([]);
    expect(box.nextDueAt()).toBe(1_001 * HINT_WINDOW_MS);
    expect(box.due(1_001 * HINT_WINDOW_MS, 10, 3_600_000).map((r) => r.event_id)).toEqual([next]);
    // More hints in the same window: already pending, no more rows.
    for (let i = 0; i < 20; i += 1)
      box.add(qpayHintEvent('vm-1-ab-1-0badf00d', 'INV-1', t0 + 300 + i), Buffer.alloc(0), 'qpay', 'webhook', t0 + 300);
    expect((db.prepare('SELECT count(*) AS n FROM webhook_events').get() as { n: number }).n).toBe(2);
    db.close();
  });
});
