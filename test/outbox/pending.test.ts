/**
 * The outbox's read of what the broker has not acknowledged yet, on a real SQLite file: the MQTT
 * publisher reads only the rows after the last one it sent (src/mqtt/publisher.ts), in order,
 * whatever is still in flight before them.
 */
import { describe, expect, it } from 'vitest';
import { createOutbox } from '../../src/outbox/index.js';
import { systemClock } from '../../src/util/index.js';
import { tempDatabase } from '../mqtt/harness.js';

describe('outbox.pending', () => {
  it('reads the oldest rows first, and with afterSeq only those after it, up to the limit', () => {
    const { db } = tempDatabase();
    const outbox = createOutbox({ db, clock: systemClock, deviceId: 'dev-1' });
    for (let i = 0; i < 6; i += 1) outbox.raiseAlarm(`a${i}`, 'warning', `alarm ${i}`);
    const all = outbox.pending(100);
    expect(all).toHaveLength(6);
    const seqs = all.map((row) => row.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(outbox.pending(2).map((row) => row.seq)).toEqual(seqs.slice(0, 2));
    expect(outbox.pending(2, seqs[1]).map((row) => row.seq)).toEqual(seqs.slice(2, 4));
    expect(outbox.pending(100, seqs[3]).map((row) => row.seq)).toEqual(seqs.slice(4));
    expect(outbox.pending(100, seqs[5])).toEqual([]);
    // An acknowledged row is gone from the head; the rows after the cursor do not move.
    outbox.acknowledge(seqs[0]!);
    expect(outbox.pending(100).map((row) => row.seq)).toEqual(seqs.slice(1));
    expect(outbox.pending(1, seqs[2]).map((row) => row.seq)).toEqual([seqs[3]]);
  });
});
