import { prepared, type Db } from '../store/index.js';

export type VendJobState = 'queued' | 'firing' | 'done' | 'failed' | 'uncertain' | 'resolved';

export interface VendJobRow {
  order_id: number;
  state: VendJobState;
  slot: string | null;
  created_at: number;
  claimed_at: number | null;
  finished_at: number | null;
  outcome: string | null;
  detail: string | null;
  /** Manual capture: pending → sending (claimed) → done | pending again (backed off) | failed (given up). */
  capture_state: 'pending' | 'sending' | 'done' | 'failed' | null;
  capture_attempts: number;
  next_capture_at: number | null;
}

/** The SQL of `vend_jobs`. Callers own the transaction. */
export function createVendJobRepository(db: Db) {
  return {
    get(orderId: number): VendJobRow | undefined {
      return prepared(db, 'SELECT * FROM vend_jobs WHERE order_id = ?').get(orderId) as VendJobRow | undefined;
    },
    nextQueued(): VendJobRow | undefined {
      return prepared(db, "SELECT * FROM vend_jobs WHERE state = 'queued' ORDER BY created_at, order_id LIMIT 1").get() as
        VendJobRow | undefined;
    },
    inState(state: VendJobState): VendJobRow[] {
      return prepared(db, 'SELECT * FROM vend_jobs WHERE state = ? ORDER BY order_id').all(state) as VendJobRow[];
    },
    /** queued → firing. Returns false when another runner (or a restart) got there first. */
    claim(orderId: number, now: number): boolean {
      return (
        prepared(db, "UPDATE vend_jobs SET state = 'firing', claimed_at = ? WHERE order_id = ? AND state = 'queued'").run(now, orderId)
          .changes === 1
      );
    },
    finish(orderId: number, from: VendJobState, to: VendJobState, outcome: string, detail: string | null, now: number): boolean {
      return (
        prepared(db, 'UPDATE vend_jobs SET state = ?, outcome = ?, detail = ?, finished_at = ? WHERE order_id = ? AND state = ?').run(
          to,
          outcome,
          detail,
          now,
          orderId,
          from,
        ).changes === 1
      );
    },
    setCapture(orderId: number, state: VendJobRow['capture_state']): void {
      prepared(db, 'UPDATE vend_jobs SET capture_state = ? WHERE order_id = ?').run(state, orderId);
    },
    /** Captures due now: pending and not backed off past `now`. */
    /**
     * Captures due at `now`, and those scheduled later than `now + longestWait`: no backoff is ever
     * that long, so the wall clock was set back since it was written (and would hold the capture
     * back for as long as the jump).
     */
    pendingCaptures(now: number, longestWait: number): VendJobRow[] {
      return prepared(
        db,
        "SELECT * FROM vend_jobs WHERE capture_state = 'pending' AND (coalesce(next_capture_at, 0) <= ? OR next_capture_at > ?) ORDER BY order_id",
      ).all(now, now + longestWait) as VendJobRow[];
    },
    captures(state: NonNullable<VendJobRow['capture_state']>): VendJobRow[] {
      return prepared(db, 'SELECT * FROM vend_jobs WHERE capture_state = ? ORDER BY order_id').all(state) as VendJobRow[];
    },
    /** pending → sending, before the capture call (caller: durably). */
    claimCapture(orderId: number, now: number): boolean {
      return (
        prepared(
          db,
          "UPDATE vend_jobs SET capture_state = 'sending', capture_attempts = capture_attempts + 1, next_capture_at = ? WHERE order_id = ? AND capture_state = 'pending'",
        ).run(now, orderId).changes === 1
      );
    },
    /** Back to pending, not before `at`. */
    retryCapture(orderId: number, at: number): void {
      prepared(db, "UPDATE vend_jobs SET capture_state = 'pending', next_capture_at = ? WHERE order_id = ?").run(at, orderId);
    },
  };
}

export type VendJobRepository = ReturnType<typeof createVendJobRepository>;
